package collector

import (
	"fmt"
	"math"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// signal describes one contract series: its name, what it means, and which
// table entries feed it.
type signal struct {
	name  string
	help  string
	kind  kind
	field int
}

var (
	gaugeSignals = [snapshot.NumGauges]signal{
		{"llm_requests_running", "Requests in the engine's running batch (data-parallel ranks summed).", kindGauge, int(snapshot.Running)},
		{"llm_requests_waiting", "Requests waiting to be scheduled.", kindGauge, int(snapshot.Waiting)},
		{"llm_kv_cache_usage_ratio", "KV-cache usage from 0 to 1 (the fullest data-parallel rank).", kindGauge, int(snapshot.KVCacheUsage)},
		{"llm_prefix_cache_hit_ratio", "Prefix-cache hit ratio from 0 to 1, for engines that report only a ratio.", kindGauge, int(snapshot.PrefixCacheHitRatio)},
	}
	counterSignals = [snapshot.NumCounters]signal{
		{"llm_preemptions_total", "Requests preempted (SGLang: retracted) to free KV cache.", kindCounter, int(snapshot.Preemptions)},
		{"llm_prompt_tokens_total", "Prompt tokens of the requests, computed or found in the prefix cache alike.", kindCounter, int(snapshot.PromptTokens)},
		{"llm_generation_tokens_total", "Generation (decode) tokens produced.", kindCounter, int(snapshot.GenerationTokens)},
		{"llm_prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", kindCounter, int(snapshot.PrefixCacheQueries)},
		{"llm_prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", kindCounter, int(snapshot.PrefixCacheHits)},
		{"llm_engine_steps_total", "Forward passes (batches) the engine ran; it advances every step while requests are served, also on engines that count generated tokens only when a request completes.", kindCounter, int(snapshot.EngineSteps)},
	}
	finishedSignal = signal{"llm_requests_finished_total", "Finished requests by finish reason.", kindFinished, 0}
	histSignals    = [snapshot.NumHists]signal{
		{"llm_time_to_first_token_seconds", "Time to first token as the engine measures it, with the engine's own bucket bounds.", kindHist, int(snapshot.TTFT)},
		{"llm_inter_token_latency_seconds", "Time between consecutive output tokens, one observation per token.", kindHist, int(snapshot.ITL)},
		{"llm_request_time_per_output_token_seconds", "Mean time per output token, one observation per finished request.", kindHist, int(snapshot.TPOT)},
		{"llm_e2e_request_latency_seconds", "End-to-end request latency.", kindHist, int(snapshot.E2E)},
		{"llm_request_queue_time_seconds", "Time requests waited in the queue before being scheduled.", kindHist, int(snapshot.QueueTime)},
		{"llm_request_generation_tokens", "Generation tokens of each finished request, one observation per request at finish.", kindHist, int(snapshot.OutputTokens)},
	}
)

// fullHelp appends the engine families a signal is read from, so that the
// HELP line of every series says where its numbers come from.
func (s signal) fullHelp() string {
	var parts []string
	for _, e := range snapshot.Engines {
		fams := tables[e].familiesFor(s.kind, s.field)
		if len(fams) > 0 {
			parts = append(parts, strings.Join(fams, " or "))
		}
	}
	if len(parts) == 0 {
		return s.help
	}
	return s.help + " Source: " + strings.Join(parts, "; ") + "."
}

// Support says which contract series an engine can provide at all; the
// rest are never exported for it.
func Support(e snapshot.Engine) map[string]bool {
	t := tables[e]
	out := map[string]bool{}
	for _, list := range [][]signal{gaugeSignals[:], counterSignals[:], {finishedSignal}, histSignals[:]} {
		for _, s := range list {
			out[s.name] = len(t.familiesFor(s.kind, s.field)) > 0
		}
	}
	return out
}

// Current says which contract series the engine's current versions
// provide: Support less the series only families an engine removed fed
// (llama.cpp's KV-cache gauge). Older versions may still provide those.
func Current(e snapshot.Engine) map[string]bool {
	t := tables[e]
	out := map[string]bool{}
	for _, list := range [][]signal{gaugeSignals[:], counterSignals[:], {finishedSignal}, histSignals[:]} {
		for _, s := range list {
			out[s.name] = t != nil && len(t.families(s.kind, s.field, false)) > 0
		}
	}
	return out
}

// ProvidesHist reports whether some version of engine e exposes a family
// for histogram h, so that a model without it may simply not have created
// it yet (engines create a histogram's series on its first observation).
func ProvidesHist(e snapshot.Engine, h snapshot.Hist) bool {
	t := tables[e]
	return t != nil && len(t.familiesFor(kindHist, int(h))) > 0
}

// ProvidesFinished reports whether engine e has finish-reason counters.
func ProvidesFinished(e snapshot.Engine) bool {
	t := tables[e]
	return t != nil && len(t.familiesFor(kindFinished, 0)) > 0
}

// Descs are the descriptors of one target's engine series. The target name
// and the target's static labels are constant labels.
type Descs struct {
	Up *prometheus.Desc
	// ModelInfo is llm_model_info: 1 for each model of the latest
	// successful scrape, kept while the engine is down.
	ModelInfo *prometheus.Desc
	gauges    [snapshot.NumGauges]*prometheus.Desc
	counters  [snapshot.NumCounters]*prometheus.Desc
	finished  *prometheus.Desc
	hists     [snapshot.NumHists]*prometheus.Desc
}

// NewDescs builds the descriptors for a target.
func NewDescs(target string, static map[string]string) *Descs {
	cl := prometheus.Labels{"target": target}
	for k, v := range static {
		cl[k] = v
	}
	vl := []string{"engine", "model"}
	d := &Descs{
		Up: prometheus.NewDesc("llm_up", "1 when the last scrape of the engine's /metrics succeeded and parsed, 0 otherwise.", []string{"engine"}, cl),
		ModelInfo: prometheus.NewDesc("llm_model_info", "1 for each model the engine served at its latest successful scrape; kept while the engine is down, so that an alert on a down target names its models.",
			[]string{"engine", "model"}, cl),
		finished: prometheus.NewDesc(finishedSignal.name, finishedSignal.fullHelp(),
			[]string{"engine", "model", "reason"}, cl),
	}
	for i, s := range gaugeSignals {
		d.gauges[i] = prometheus.NewDesc(s.name, s.fullHelp(), vl, cl)
	}
	for i, s := range counterSignals {
		d.counters[i] = prometheus.NewDesc(s.name, s.fullHelp(), vl, cl)
	}
	for i, s := range histSignals {
		d.hists[i] = prometheus.NewDesc(s.name, s.fullHelp(), vl, cl)
	}
	return d
}

// Collect sends the normalized series of one snapshot. Absent signals are
// not sent.
func (d *Descs) Collect(ch chan<- prometheus.Metric, snap *snapshot.Snapshot) {
	for _, m := range d.Append(nil, snap) {
		ch <- m
	}
}

// Append adds the normalized series of one snapshot to out as const
// metrics.
func (d *Descs) Append(out []prometheus.Metric, snap *snapshot.Snapshot) []prometheus.Metric {
	s := ConstSink(out)
	d.Emit(&s, snap)
	return s
}

// LabelValues are up to six label values, passed by value so that emitting
// a series allocates nothing.
type LabelValues struct {
	N int
	V [6]string
}

// Labels packs label values (at most six).
func Labels(v ...string) (lv LabelValues) {
	lv.N = copy(lv.V[:], v)
	return lv
}

// Slice returns the values as a slice.
func (lv *LabelValues) Slice() []string { return lv.V[:lv.N] }

// Sink receives series one by one: the exporter's renderer keeps a
// dto.Metric per series between renders and only updates its value, and
// ConstSink builds client_golang const metrics.
type Sink interface {
	Sample(desc *prometheus.Desc, typ prometheus.ValueType, v float64, lv LabelValues)
	Histogram(desc *prometheus.Desc, h *snapshot.Histogram, lv LabelValues)
}

// Emit sends the normalized series of one snapshot to s. Absent signals
// are not sent.
func (d *Descs) Emit(s Sink, snap *snapshot.Snapshot) {
	e := string(snap.Engine)
	for i := range snap.Models {
		m := &snap.Models[i]
		for g, v := range m.Gauges {
			if v.OK {
				s.Sample(d.gauges[g], prometheus.GaugeValue, v.V, Labels(e, m.Name))
			}
		}
		for c, v := range m.Counters {
			if v.OK {
				s.Sample(d.counters[c], prometheus.CounterValue, v.V, Labels(e, m.Name))
			}
		}
		for reason, v := range m.Finished {
			s.Sample(d.finished, prometheus.CounterValue, v, Labels(e, m.Name, reason))
		}
		for h, hv := range m.Hists {
			if hv != nil {
				s.Histogram(d.hists[h], hv, Labels(e, m.Name))
			}
		}
	}
}

// ConstSink collects series as client_golang const metrics; a series that
// cannot be built becomes an invalid metric, reported for itself alone.
type ConstSink []prometheus.Metric

// Sample implements Sink.
func (c *ConstSink) Sample(desc *prometheus.Desc, typ prometheus.ValueType, v float64, lv LabelValues) {
	*c = append(*c, Metric(desc, typ, v, lv.Slice()...))
}

// Histogram implements Sink.
func (c *ConstSink) Histogram(desc *prometheus.Desc, h *snapshot.Histogram, lv LabelValues) {
	*c = append(*c, HistogramMetric(desc, h, lv.Slice()...))
}

// HistogramMetric is a const histogram of h, or an invalid metric.
func HistogramMetric(desc *prometheus.Desc, h *snapshot.Histogram, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.Bounds))
	for j, b := range h.Bounds {
		buckets[b] = toCount(h.Cumulative[j])
	}
	met, err := prometheus.NewConstHistogram(desc, toCount(h.Count), h.Sum, buckets, labels...)
	if err != nil {
		model := ""
		if len(labels) > 1 {
			model = labels[1]
		}
		return prometheus.NewInvalidMetric(desc, fmt.Errorf("model %q: %w", model, err))
	}
	return met
}

// ToCount rounds a cumulative float count to the integer a histogram
// bucket carries.
func ToCount(v float64) uint64 { return toCount(v) }

func toCount(v float64) uint64 { return uint64(math.Round(v)) }

// Metric is prometheus.NewConstMetric that never panics: a bad label set
// becomes an invalid metric, which the registry reports for that series
// alone, instead of aborting the whole Collect.
func Metric(desc *prometheus.Desc, typ prometheus.ValueType, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(desc, typ, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	return m
}

// All returns every descriptor, for checks of their label names.
func (d *Descs) All() []*prometheus.Desc {
	out := []*prometheus.Desc{d.Up, d.ModelInfo, d.finished}
	out = append(out, d.gauges[:]...)
	out = append(out, d.counters[:]...)
	return append(out, d.hists[:]...)
}
