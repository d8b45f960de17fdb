package exporter

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// sloDescs are the descriptors of a target's SLO and goodput series.
type sloDescs struct {
	supported, requests, good, interpolated, aborted *prometheus.Desc
	tokens, goodTokens                               *prometheus.Desc
	goodReq, goodTok, tokBounded                     *prometheus.Desc
	judged, failed, objGood, objJudged               *prometheus.Desc
	outLen, outTok, outUnmeasured, outStep           *prometheus.Desc
}

func newSLODescs(cl prometheus.Labels) *sloDescs {
	obj := []string{"engine", "model", "slo", "objective"}
	bound := []string{"engine", "model", "slo", "bound"}
	return &sloDescs{
		supported: prometheus.NewDesc("llm_slo_supported",
			"1 when the engine exposes what the objective needs for this model, 0 when it cannot be measured (no fake attainment is exported then). source names the engine histogram judged; fallback=\"true\" when tpot is judged per token from the inter-token histogram because the engine has no per-request one.",
			append(obj, "source", "fallback"), cl),
		requests: prometheus.NewDesc("llm_slo_requests_total",
			"Requests judged against an SLO objective (tokens for itl, which is per token; finished requests for error). A tpot judged per token (llm_slo_supported{fallback=\"true\"}) is counted in llm_slo_tokens_total, never here.", obj, cl),
		tokens: prometheus.NewDesc("llm_slo_tokens_total",
			"Tokens judged against a per-request objective while it is judged per token: tpot from the inter-token histogram while the engine has no per-request TPOT histogram (llm_slo_supported{fallback=\"true\"}). Apart from llm_slo_requests_total, so that request counts never hold tokens.", obj, cl),
		goodTokens: prometheus.NewDesc("llm_slo_good_tokens_total",
			"Of llm_slo_tokens_total, the tokens whose inter-token gap met the objective (interpolated inside the bucket that straddles the threshold).", obj, cl),
		good: prometheus.NewDesc("llm_slo_good_requests_total",
			"Of llm_slo_requests_total, those that met the objective; interpolated linearly inside the bucket that straddles the threshold.", obj, cl),
		interpolated: prometheus.NewDesc("llm_slo_interpolated_requests_total",
			"Of llm_slo_requests_total, those that fell in the bucket straddling the threshold: the size of the interpolation uncertainty (0 when the threshold is a bucket bound).", obj, cl),
		aborted: prometheus.NewDesc("llm_slo_aborted_requests_total",
			"Finished requests aborted (error objective), counted whether or not include_abort makes them failures.", obj, cl),
		goodReq: prometheus.NewDesc("llm_goodput_requests_total",
			"Requests that met every objective of the SLO at once. bound=\"lower\" and \"upper\": cumulative Fréchet bounds from the per-objective counts since the daemon started; for any window between two scrapes, increase(lower) − edge ≤ the window's good requests ≤ increase(upper) + edge, edge being the requests in flight (llm_requests_running + llm_requests_waiting) at the window's two ends, when every objective judges requests and its threshold is a bucket bound or its interpolated requests are allowed for (they are). Looser than the per-window bounds the recording rules take from llm_goodput_judged_requests_total, llm_goodput_failed_requests_total and llm_goodput_objective_good_requests_total. bound=\"exact\" judges each request from its OTLP trace span, bound=\"sampled\" the same over sampled spans only.", bound, cl),
		goodTok: prometheus.NewDesc("llm_goodput_tokens_total",
			"Generation tokens of the requests that met every objective of the SLO. bound=\"lower\" and \"upper\": each scrape interval's bounds added up; where the engine publishes the per-request output-length histogram (llm_request_generation_tokens) and every objective judges requests, each interval's are bounds on the tokens of the requests that finished in it, the failing requests given the longest (lower) and shortest (upper) outputs its buckets and sum allow, but their sum over a window is not a bound when objectives judged a request in different intervals (TTFT at its first token, the others at its finish): for a window, read target_model_slo_bound:llm_goodput_tokens:window_increase5m, drawn from the window's totals, for which lower − edge tokens ≤ the window's good tokens ≤ upper + edge tokens, edge tokens being at most the requests in flight at the window's two ends times the most tokens one request can have. Without the histogram, or with a per-token objective (llm_goodput_tokens_bounded 0), an estimate: generation tokens of each interval times the joint attainment bound, which overstates the lower bound when failing requests are longer than passing ones. bound=\"exact\" and \"sampled\": the tokens of the requests judged good from their OTLP trace spans.", bound, cl),
		judged: prometheus.NewDesc("llm_goodput_judged_requests_total",
			"Finished requests judged against every objective of the SLO (the joint's requests: e2e observations, else finish reasons), over the scrape intervals in which no objective's data glitched. The window bounds: lower = increase(this) − increase(llm_goodput_failed_requests_total) − Σ over objectives of max(0, increase(this) − increase(llm_goodput_objective_judged_requests_total)), upper = min(increase(this), min over objectives of increase(llm_goodput_objective_good_requests_total)); the window's good requests lie in [lower − edge, upper + edge], edge the requests in flight at its two ends.", []string{"engine", "model", "slo"}, cl),
		failed: prometheus.NewDesc("llm_goodput_failed_requests_total",
			"Summed over the SLO's objectives, the requests that may have failed each (judged − good + interpolated), over the same intervals as llm_goodput_judged_requests_total. A per-token objective (itl, tpot fallback) enters as its share of the requests: an estimate.", []string{"engine", "model", "slo"}, cl),
		objGood: prometheus.NewDesc("llm_goodput_objective_good_requests_total",
			"Per objective, the requests that may have met it (good + interpolated, at most the judged), over the same intervals as llm_goodput_judged_requests_total.", obj, cl),
		objJudged: prometheus.NewDesc("llm_goodput_objective_judged_requests_total",
			"Per objective, the requests it judged, over the same intervals as llm_goodput_judged_requests_total (the finished requests for error and per-token objectives). Finished requests it did not judge (TTFT of a request that never got a first token) may have failed it.", obj, cl),
		outLen: prometheus.NewDesc("llm_goodput_output_length_requests_total",
			"Of llm_goodput_judged_requests_total, those whose output length the engine's per-request output-length histogram (llm_request_generation_tokens) counted, with at most le_tokens tokens (le_tokens=\"+Inf\": all of them; a histogram bucket re-exported as a counter, so not named le), over the same intervals and in the bucket layout first seen. With llm_goodput_output_length_tokens_total and llm_goodput_output_length_step_tokens it bounds the good requests' tokens over any window (the recording rule target_model_slo_bound:llm_goodput_tokens:window_increase5m).", []string{"engine", "model", "slo", "le_tokens"}, cl),
		outTok: prometheus.NewDesc("llm_goodput_output_length_tokens_total",
			"The output tokens of the requests counted in llm_goodput_output_length_requests_total (the histogram's sum).", []string{"engine", "model", "slo"}, cl),
		outUnmeasured: prometheus.NewDesc("llm_goodput_output_length_unmeasured_requests_total",
			"Of llm_goodput_judged_requests_total, those whose output lengths are unknown: the engine has no output-length histogram, its increase was unusable (a glitch, a sum its buckets cannot hold) or its layout differs from the first. A window in which this rises has no token bounds.", []string{"engine", "model", "slo"}, cl),
		outStep: prometheus.NewDesc("llm_goodput_output_length_step_tokens",
			"Per bucket bound of llm_goodput_output_length_requests_total, the weights the token window bounds walk its buckets with: side=\"lower\", the fewest tokens a request of the next bucket can have minus those of this bucket's; side=\"upper\", the same for the most (0 at the last finite bound), and at le_tokens=\"+Inf\" the most tokens a request below the last finite bound can have.", []string{"engine", "model", "slo", "le_tokens", "side"}, cl),
		tokBounded: prometheus.NewDesc("llm_goodput_tokens_bounded",
			"1 when the good tokens' lower and upper bounds are true bounds for this SLO (the engine has the per-request output-length histogram and no objective is judged per token: the window bounds from llm_goodput_output_length_requests_total, and each interval's in llm_goodput_tokens_total), 0 when they are an estimate.", []string{"engine", "model", "slo"}, cl),
	}
}

// emit sends a tracker's state as series.
func (d *sloDescs) emit(s collector.Sink, tr *goodput.Tracker, engine snapshot.Engine) {
	e := string(engine)
	cm := func(desc *prometheus.Desc, t prometheus.ValueType, v float64, lv collector.LabelValues) {
		s.Sample(desc, t, v, lv)
	}
	for _, ms := range tr.Models() {
		for _, ss := range ms.SLOs {
			for _, os := range ss.Objectives {
				obj := string(os.Objective.Kind)
				r := os.Resolution
				sup := 0.0
				if r.Supported {
					sup = 1
				}
				source := r.Source
				if os.Objective.Kind == goodput.KindError && r.Supported {
					source = "finished_reason"
				}
				cm(d.supported, prometheus.GaugeValue, sup, collector.Labels(e, ms.Model, ss.SLO, obj, source, strconv.FormatBool(r.Fallback)))
				if os.Tokens.Judged > 0 {
					cm(d.tokens, prometheus.CounterValue, os.Tokens.Judged, collector.Labels(e, ms.Model, ss.SLO, obj))
					cm(d.goodTokens, prometheus.CounterValue, os.Tokens.Good, collector.Labels(e, ms.Model, ss.SLO, obj))
				}
				if !r.Supported && os.Total.Judged == 0 {
					continue
				}
				cm(d.requests, prometheus.CounterValue, os.Total.Judged, collector.Labels(e, ms.Model, ss.SLO, obj))
				cm(d.good, prometheus.CounterValue, os.Total.Good, collector.Labels(e, ms.Model, ss.SLO, obj))
				if os.Objective.Kind == goodput.KindError {
					cm(d.aborted, prometheus.CounterValue, os.Total.Aborted, collector.Labels(e, ms.Model, ss.SLO, obj))
				} else {
					cm(d.interpolated, prometheus.CounterValue, os.Total.Interpolated, collector.Labels(e, ms.Model, ss.SLO, obj))
				}
			}
			// The joint's counters stay, unchanged, while a family it
			// needs is left out of a scrape (a bad value, a torn body):
			// counted once, a series is exported for as long as its
			// model is kept, as the per-objective ones are.
			j := ss.Joint
			if !j.Supported && j.Total.Requests == (goodput.Bounds{}) && j.Total.Tokens == (goodput.Bounds{}) {
				continue
			}
			if (j.Supported && j.RequestsSource != "") || j.Total.Requests != (goodput.Bounds{}) {
				cm(d.goodReq, prometheus.CounterValue, j.Total.Requests.Lower, collector.Labels(e, ms.Model, ss.SLO, "lower"))
				cm(d.goodReq, prometheus.CounterValue, j.Total.Requests.Upper, collector.Labels(e, ms.Model, ss.SLO, "upper"))
				cm(d.judged, prometheus.CounterValue, j.Window.Requests, collector.Labels(e, ms.Model, ss.SLO))
				cm(d.failed, prometheus.CounterValue, j.Window.Failed, collector.Labels(e, ms.Model, ss.SLO))
				for k, os := range ss.Objectives {
					g := 0.0
					if k < len(j.Window.Good) {
						g = j.Window.Good[k]
					}
					cm(d.objGood, prometheus.CounterValue, g, collector.Labels(e, ms.Model, ss.SLO, string(os.Objective.Kind)))
					n := 0.0
					if k < len(j.Window.Judged) {
						n = j.Window.Judged[k]
					}
					cm(d.objJudged, prometheus.CounterValue, n, collector.Labels(e, ms.Model, ss.SLO, string(os.Objective.Kind)))
				}
				d.emitOutput(s, &j.Window.Output, e, ms.Model, ss.SLO)
			}
			if (j.Supported && j.TokensSupported) || j.Total.Tokens != (goodput.Bounds{}) {
				cm(d.goodTok, prometheus.CounterValue, j.Total.Tokens.Lower, collector.Labels(e, ms.Model, ss.SLO, "lower"))
				cm(d.goodTok, prometheus.CounterValue, j.Total.Tokens.Upper, collector.Labels(e, ms.Model, ss.SLO, "upper"))
				bounded := 0.0
				if j.TokensBounded {
					bounded = 1
				}
				cm(d.tokBounded, prometheus.GaugeValue, bounded, collector.Labels(e, ms.Model, ss.SLO))
			}
		}
	}
}

// emitOutput sends the output-length totals of one joint: the requests
// whose lengths are unknown always, the buckets, their tokens and the
// steps once the histogram has been seen. The layout is the first one
// seen and never changes, so these series never come and go while the
// model is kept.
func (d *sloDescs) emitOutput(s collector.Sink, o *goodput.OutputTotals, e, model, slo string) {
	s.Sample(d.outUnmeasured, prometheus.CounterValue, o.Unmeasured, collector.Labels(e, model, slo))
	if len(o.Bounds) == 0 {
		return
	}
	les, lower, upper, top := o.Layout()
	if len(les) != len(o.Bounds) || len(o.Cum) != len(o.Bounds) {
		return
	}
	for j, le := range les {
		s.Sample(d.outLen, prometheus.CounterValue, o.Cum[j], collector.Labels(e, model, slo, le))
		s.Sample(d.outStep, prometheus.GaugeValue, lower[j], collector.Labels(e, model, slo, le, "lower"))
		s.Sample(d.outStep, prometheus.GaugeValue, upper[j], collector.Labels(e, model, slo, le, "upper"))
	}
	s.Sample(d.outLen, prometheus.CounterValue, o.Count, collector.Labels(e, model, slo, "+Inf"))
	s.Sample(d.outStep, prometheus.GaugeValue, top, collector.Labels(e, model, slo, "+Inf", "upper"))
	s.Sample(d.outTok, prometheus.CounterValue, o.Sum, collector.Labels(e, model, slo))
}

// sloNotes logs, once per target, model and SLO, what an operator should
// know about how its objectives are judged. A reload keeps what was said:
// a note is logged again only when its content changes (new bucket advice
// for a new threshold, an objective newly unsupported, pending or
// measurable), and the notes of a model the tracker forgot are dropped
// with it.
type sloNotes struct {
	said map[string]map[string]bool // model -> note keys
	// state is, per model and slo/objective, what was last said about
	// whether it can be measured: unsupported, pending or measurable.
	state map[string]map[string]string
}

// Whether an objective can be measured on a model, as logged.
const (
	noteUnsupported = "unsupported" // the engine has no family for it
	notePending     = "pending"     // the engine has one, not created yet
	noteMeasurable  = "measurable"
)

func (n *sloNotes) check(logger *slog.Logger, tr *goodput.Tracker, snap *snapshot.Snapshot, slos []goodput.SLO) {
	if n.said == nil {
		n.said = map[string]map[string]bool{}
		n.state = map[string]map[string]string{}
	}
	models := tr.Models()
	if len(n.said) > len(models) || len(n.state) > len(models) {
		live := make(map[string]bool, len(models))
		for _, ms := range models {
			live[ms.Model] = true
		}
		for m := range n.said {
			if !live[m] {
				delete(n.said, m)
			}
		}
		for m := range n.state {
			if !live[m] {
				delete(n.state, m)
			}
		}
	}
	for _, ms := range models {
		m := snap.Model(ms.Model)
		if m == nil {
			continue
		}
		said, state := n.said[ms.Model], n.state[ms.Model]
		if said == nil {
			said, state = map[string]bool{}, map[string]string{}
			n.said[ms.Model], n.state[ms.Model] = said, state
		}
		once := func(key string) bool {
			if said[key] {
				return false
			}
			said[key] = true
			return true
		}
		var applied []goodput.SLO
		for _, ss := range ms.SLOs {
			for _, s := range slos {
				if s.Name == ss.SLO {
					applied = append(applied, s)
				}
			}
			for _, os := range ss.Objectives {
				obj, r := os.Objective.Kind, os.Resolution
				key := fmt.Sprintf("%s/%s", ss.SLO, obj)
				if r.Unstable {
					continue // logged as a discontinuity of its histogram
				}
				now := noteMeasurable
				if !r.Supported {
					now = noteUnsupported
					if engineCanMeasure(snap.Engine, obj) {
						now = notePending
					}
				}
				was, known := state[key]
				state[key] = now
				switch {
				case now == was || (!known && now == noteMeasurable):
				case now == noteUnsupported:
					logger.Warn("SLO objective cannot be measured on this engine; exported as llm_slo_supported 0 and no goodput for the SLO",
						"model", ms.Model, "slo", ss.SLO, "objective", obj, "engine", snap.Engine)
				case now == notePending:
					logger.Info("SLO objective not measurable yet: the engine creates its histogram on the first request it observes; llm_slo_supported is 0 until then",
						"model", ms.Model, "slo", ss.SLO, "objective", obj, "engine", snap.Engine)
				default:
					logger.Info("SLO objective measurable now", "model", ms.Model, "slo", ss.SLO, "objective", obj, "source", r.Source)
				}
				// Every switch between per-token and per-request judging
				// is logged (and labelled: llm_slo_supported{fallback}).
				if r.Supported && obj == goodput.KindTPOT {
					fb := "per-request"
					if r.Fallback {
						fb = "per-token"
					}
					prev, seen := state["judging/"+key]
					state["judging/"+key] = fb
					switch {
					case r.Fallback && prev != fb:
						logger.Warn("tpot judged per token from the inter-token histogram: the engine has no per-request TPOT histogram (yet); counted in llm_slo_tokens_total, not in llm_slo_requests_total, with llm_slo_supported{fallback=\"true\"}",
							"model", ms.Model, "slo", ss.SLO, "source", r.Source)
					case !r.Fallback && seen && prev != fb:
						logger.Info("tpot judged per request again: the engine now has its per-request TPOT histogram; the tokens judged before stay in llm_slo_tokens_total",
							"model", ms.Model, "slo", ss.SLO, "source", r.Source)
					}
				}
			}
		}
		if advice := goodput.BucketAdvice(m, applied...); advice != nil {
			if flags := bucketFlags(snap.Engine, advice); flags != "" && once("buckets/"+flags) {
				logger.Info("an SLO threshold is not a bucket bound, so attainment is interpolated; these engine flags make it exact",
					"model", ms.Model, "flags", flags)
			}
		}
	}
}

// engineCanMeasure reports whether some version of the engine exposes
// what objective k needs, so that a model lacking it may only be waiting
// for its first request.
func engineCanMeasure(e snapshot.Engine, k goodput.Kind) bool {
	switch k {
	case goodput.KindError:
		return collector.ProvidesFinished(e)
	case goodput.KindTTFT:
		return collector.ProvidesHist(e, snapshot.TTFT)
	case goodput.KindTPOT:
		return collector.ProvidesHist(e, snapshot.TPOT) || collector.ProvidesHist(e, snapshot.ITL)
	case goodput.KindITL:
		return collector.ProvidesHist(e, snapshot.ITL)
	case goodput.KindE2E:
		return collector.ProvidesHist(e, snapshot.E2E)
	case goodput.KindQueue:
		return collector.ProvidesHist(e, snapshot.QueueTime)
	}
	return false
}

// sglangBucketFlags are SGLang's server flags for the bucket families
// goodput.BucketAdvice names (SGLang has none for its queue histogram).
var sglangBucketFlags = map[string]string{
	goodput.FamilyTTFT:           "--bucket-time-to-first-token",
	goodput.FamilyInterToken:     "--bucket-inter-token-latency",
	goodput.FamilyRequestLatency: "--bucket-e2e-request-latency",
}

// bucketFlags formats bucket advice as the engine's own flags: vLLM takes
// one JSON value, SGLang a space-separated list per histogram; "" for an
// engine that has no such flag.
func bucketFlags(engine snapshot.Engine, advice map[string][]float64) string {
	switch engine {
	case snapshot.VLLM:
		js, _ := goodput.CustomHistogramBuckets(advice)
		return "--custom-histogram-buckets '" + js + "'"
	case snapshot.SGLang:
	default:
		// TGI, Triton, trtllm-serve and Dynamo take no list of bounds
		// on their command line (Dynamo only a log-spaced range).
		return ""
	}
	var parts []string
	for _, fam := range slices.Sorted(maps.Keys(advice)) {
		flag := sglangBucketFlags[fam]
		if flag == "" {
			continue
		}
		nums := make([]string, len(advice[fam]))
		for i, b := range advice[fam] {
			nums[i] = strconv.FormatFloat(b, 'g', -1, 64)
		}
		parts = append(parts, flag+" "+strings.Join(nums, " "))
	}
	return strings.Join(parts, " ")
}

// sloConfigSeries exports the declared objectives as values, so that
// rules compute burn rates generically.
func sloConfigSeries(slos []goodput.SLO, s collector.Sink) {
	for _, sl := range slos {
		for _, o := range sl.Objectives {
			if o.Kind.Latency() {
				s.Sample(thresholdDesc, prometheus.GaugeValue, o.Threshold, collector.Labels(sl.Name, string(o.Kind)))
			}
			s.Sample(targetDesc, prometheus.GaugeValue, o.Target, collector.Labels(sl.Name, string(o.Kind)))
		}
	}
}

var (
	thresholdDesc = prometheus.NewDesc("llm_slo_threshold_seconds",
		"Latency threshold of an SLO objective as configured.", []string{"slo", "objective"}, nil)
	targetDesc = prometheus.NewDesc("llm_slo_target_ratio",
		"Target attainment of an SLO objective as configured (0.99 for \"P99 under the threshold\").", []string{"slo", "objective"}, nil)
)
