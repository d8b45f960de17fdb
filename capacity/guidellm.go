package capacity

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// GuideLLM's benchmarks report (`guidellm benchmark --output-path
// benchmarks.json|.yaml`, `guidellm run --output kind=json`). Checked
// against vllm-project/guidellm's source at v0.2.1 (the fields read are
// v0.3's), v0.3.0, v0.4.0, v0.5.0 and
// main (after v0.7.3), and against real reports of v0.3, 0.5.0.dev0 and
// 0.8.0.dev18
// (testdata/real/guidellm):
//
//   - v0.3 keeps the strategy under benchmarks[].args.strategy and the
//     request counts at benchmarks[].request_totals; v0.4 and later under
//     benchmarks[].config.strategy and benchmarks[].metrics.request_totals
//     (GenerativeMetrics.request_totals: StatusBreakdown[int, int, int,
//     int], successful/incomplete/errored/total).
//   - A strategy is {type_, rate} for constant and poisson, {type_,
//     streams} for concurrent, {type_} for synchronous and throughput.
//   - metrics.<name>.successful is a distribution summary {mean, median,
//     percentiles: {p50, p90, p95, p99, p999}}; output_tokens_per_second
//     is the tool's throughput over its measurement window.
//   - requests.{successful, incomplete, errored}[] are per-request stats
//     (possibly a sample: --sample-requests), which may include requests
//     outside the measurement window; each carries request_start_time and
//     request_end_time (v0.3: start_time, end_time), and the benchmark's
//     start_time and end_time are the window's bounds.
//
// Only the fields above are decoded; anything else may change shape.

type guideDist struct {
	Mean        *float64           `json:"mean"`
	Median      *float64           `json:"median"`
	Percentiles map[string]float64 `json:"percentiles"`
}

type guideRequest struct {
	TTFTms       *float64 `json:"time_to_first_token_ms"`
	ITLms        *float64 `json:"inter_token_latency_ms"`
	Latency      *float64 `json:"request_latency"` // seconds
	OutputTokens *float64 `json:"output_tokens"`
	OutputUsage  *struct {
		TextTokens *float64 `json:"text_tokens"`
	} `json:"output_metrics"`
	Start    *float64 `json:"request_start_time"`
	End      *float64 `json:"request_end_time"`
	StartV03 *float64 `json:"start_time"`
	EndV03   *float64 `json:"end_time"`
}

// guidePct maps GuideLLM's percentile keys to percentiles.
var guidePct = map[string]float64{"p50": 50, "p90": 90, "p95": 95, "p99": 99, "p999": 99.9}

func yamlToJSON(b []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func ms(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p / 1000
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func parseGuideLLM(body []byte) ([]Point, error) {
	top, err := obj(body)
	if err != nil {
		return nil, fmt.Errorf("GuideLLM report: %w", err)
	}
	var benches []json.RawMessage
	if err := json.Unmarshal(top["benchmarks"], &benches); err != nil {
		return nil, errors.New("GuideLLM report: benchmarks: not a list")
	}
	if len(benches) == 0 {
		return nil, errors.New("GuideLLM report holds no benchmarks")
	}
	version := guideVersion(top, benches[0])
	model := firstString(top, []string{"args", "model"}, []string{"config", "spec", "backend", "model"})
	target := firstString(top, []string{"args", "target"}, []string{"config", "spec", "backend", "target"})
	out := make([]Point, 0, len(benches))
	for i, raw := range benches {
		p, err := guideBenchmark(raw)
		if err != nil {
			return nil, fmt.Errorf("%s, benchmark %d: %w", version, i+1, err)
		}
		p.Version = version
		if p.Facts.Model == "" {
			p.Facts.Model = model
		}
		if p.Facts.Endpoint == "" {
			p.Facts.Endpoint = target
		}
		if err := checkPoint(&p, fmt.Sprintf("%s, benchmark %d", version, i+1)); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// guideVersion names the version that wrote the report: metadata's
// guidellm_version where there is one (0.5 and later), else the layout.
func guideVersion(top map[string]json.RawMessage, first json.RawMessage) string {
	if raw, _ := path(top, "metadata", "guidellm_version"); raw != nil {
		var v string
		if json.Unmarshal(raw, &v) == nil && v != "" {
			return "GuideLLM " + v
		}
	}
	if b, err := obj(first); err == nil {
		if b["config"] != nil {
			return "GuideLLM v0.4+ report (benchmarks[].config)"
		}
		if b["args"] != nil {
			return "GuideLLM v0.3 report (benchmarks[].args)"
		}
	}
	return "GuideLLM report"
}

// guideMetric decodes metrics.<name>.successful; nil when absent.
func guideMetric(metrics map[string]json.RawMessage, name string) (*guideDist, error) {
	raw, err := path(metrics, name, "successful")
	if err != nil {
		return nil, fmt.Errorf("metrics.%w", err)
	}
	if raw == nil {
		return nil, nil
	}
	var d guideDist
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("metrics.%s.successful: not a distribution summary", name)
	}
	return &d, nil
}

func guideBenchmark(raw json.RawMessage) (Point, error) {
	p := Point{Kind: LoadRate}
	b, err := obj(raw)
	if err != nil {
		return p, err
	}
	metrics, err := obj(b["metrics"])
	if err != nil {
		return p, errors.New("metrics: not an object")
	}
	thr, err := guideMetric(metrics, "output_tokens_per_second")
	if err != nil {
		return p, err
	}
	if thr == nil || thr.Mean == nil {
		return p, errors.New("metrics.output_tokens_per_second.successful.mean: missing")
	}
	p.Throughput = *thr.Mean
	rps, err := guideMetric(metrics, "requests_per_second")
	if err != nil {
		return p, err
	}
	achieved := math.NaN()
	if rps != nil && rps.Mean != nil {
		achieved = *rps.Mean
	}
	if err := guideStrategy(b, &p, achieved); err != nil {
		return p, err
	}

	// The tool's count of successful requests in its window.
	for _, where := range [][]string{{"metrics", "request_totals", "successful"}, {"request_totals", "successful"}} {
		raw, err := path(b, where...)
		if err != nil {
			return p, err
		}
		n, ok, err := count(raw)
		if err != nil {
			return p, fmt.Errorf("%s: %w", joinPath(where), err)
		}
		if ok {
			p.Counted, p.CountKnown = n, true
			break
		}
	}

	start, hasStart, err := number(b["start_time"])
	if err != nil {
		return p, fmt.Errorf("start_time: %w", err)
	}
	end, hasEnd, err := number(b["end_time"])
	if err != nil {
		return p, fmt.Errorf("end_time: %w", err)
	}
	if hasStart && hasEnd && end > start {
		p.Start, p.End = epoch(start), epoch(end)
	}
	if d, ok, err := number(b["duration"]); err != nil {
		return p, fmt.Errorf("duration: %w", err)
	} else if ok {
		p.Duration = d
	} else if hasStart && hasEnd {
		p.Duration = end - start
	}

	// GuideLLM's time_per_output_token_ms counts the first token; its
	// inter_token_latency_ms is the mean gap after it, which is what tpot
	// means here (vLLM's definition), and per request what itl is judged
	// on. request_latency is in seconds.
	for _, m := range []struct {
		name  string
		kinds []goodput.Kind
		scale float64
	}{
		{"time_to_first_token_ms", []goodput.Kind{goodput.KindTTFT}, 1e-3},
		{"inter_token_latency_ms", []goodput.Kind{goodput.KindITL, goodput.KindTPOT}, 1e-3},
		{"request_latency", []goodput.Kind{goodput.KindE2E}, 1},
	} {
		d, err := guideMetric(metrics, m.name)
		if err != nil {
			return p, err
		}
		if d == nil {
			continue
		}
		for _, kind := range m.kinds {
			if d.Median != nil {
				p.setPct(kind, 50, *d.Median*m.scale)
			}
			for k, v := range d.Percentiles {
				if pct, ok := guidePct[k]; ok {
					p.setPct(kind, pct, v*m.scale)
				}
			}
		}
	}

	p.Facts.Model = firstString(b, []string{"worker", "backend_model"})
	p.Facts.Endpoint = firstString(b, []string{"worker", "backend_target"})
	p.Facts.InputTokens, p.Facts.OutputTokens = guideTokens(metrics, "prompt_token_count"), guideTokens(metrics, "output_token_count")
	if d, _ := guideMetric(metrics, "request_latency"); d != nil && d.Mean != nil {
		p.Facts.MeanE2E = *d.Mean
	}
	switch {
	case p.Kind == LoadConcurrency || p.Strategy == "synchronous":
		p.Facts.Arrival = ArrivalClosed
	case p.MaxThroughput:
		p.Facts.Arrival = ArrivalAllAtOnce
	default:
		p.Facts.Arrival = guideType(b)
	}
	w, wok, _ := number(b["warmup_duration"])
	c, cok, _ := number(b["cooldown_duration"])
	switch {
	case wok || cok:
		p.Facts.Warmup = fmt.Sprintf("%s s of warmup and %s s of cooldown excluded", Sig3(w), Sig3(c))
	default:
		if raw, _ := path(b, "args", "warmup_duration"); raw != nil {
			w, _, _ := number(raw)
			p.Facts.Warmup = fmt.Sprintf("%s s of warmup excluded", Sig3(w))
		}
	}

	reqs, err := obj(b["requests"])
	if err != nil {
		return p, errors.New("requests: not an object")
	}
	inWindow := func(q guideRequest) bool {
		s, e := q.Start, q.End
		if s == nil {
			s = q.StartV03
		}
		if e == nil {
			e = q.EndV03
		}
		if !hasStart || !hasEnd || e == nil {
			return true
		}
		// GuideLLM's own rule (get_within_range): it ended after the
		// window opened and started before it closed.
		return *e >= start && (s == nil && *e <= end || s != nil && *s <= end)
	}
	for _, status := range []string{"successful", "errored", "incomplete"} {
		var list []json.RawMessage
		if raw := reqs[status]; !isNull(raw) {
			if err := json.Unmarshal(raw, &list); err != nil {
				return p, fmt.Errorf("requests.%s: not a list", status)
			}
		}
		for j, raw := range list {
			var q guideRequest
			if err := json.Unmarshal(raw, &q); err != nil {
				return p, fmt.Errorf("requests.%s[%d]: %w", status, j, err)
			}
			if !inWindow(q) {
				continue
			}
			if p.Requests == nil {
				p.Requests = []Request{}
			}
			if status != "successful" {
				p.Requests = append(p.Requests, Request{TTFT: math.NaN(), TPOT: math.NaN(), ITL: math.NaN(), E2E: math.NaN(), Failed: true})
				continue
			}
			tok := orNaN(q.OutputTokens)
			if q.OutputTokens == nil && q.OutputUsage != nil {
				tok = orNaN(q.OutputUsage.TextTokens)
			}
			if math.IsNaN(tok) {
				return p, fmt.Errorf("requests.successful[%d].output_tokens: missing", j)
			}
			p.Requests = append(p.Requests, Request{TTFT: ms(q.TTFTms), TPOT: ms(q.ITLms), ITL: ms(q.ITLms),
				E2E: orNaN(q.Latency), OutputTokens: tok})
		}
	}
	if len(p.Requests) == 0 {
		p.Requests = nil
	}
	return p, nil
}

// guideStrategy sets the round's load from its strategy: constant and
// poisson set a rate, concurrent a concurrency; synchronous and throughput
// set neither, and their achieved rate stands for the offered one.
func guideStrategy(b map[string]json.RawMessage, p *Point, achieved float64) error {
	field := "config.strategy"
	raw, err := path(b, "config", "strategy")
	if err != nil {
		return err
	}
	if raw == nil {
		field = "args.strategy"
		if raw, err = path(b, "args", "strategy"); err != nil {
			return err
		}
	}
	st, err := obj(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	var typ string
	if t := st["type_"]; t != nil && json.Unmarshal(t, &typ) != nil {
		return fmt.Errorf("%s.type_: not a string", field)
	}
	useAchieved := func() error {
		if math.IsNaN(achieved) {
			return fmt.Errorf("metrics.requests_per_second.successful.mean: missing, and %s sets no rate", field)
		}
		p.Rate = achieved
		return nil
	}
	switch typ {
	case "constant", "poisson", "async":
		rate, ok, err := number(st["rate"])
		if err != nil || !ok {
			return fmt.Errorf("%s.rate: missing or not a number for a %s strategy", field, typ)
		}
		p.Rate, p.RateSet = rate, true
		if c, ok, _ := number(st["max_concurrency"]); ok {
			p.Concurrency = c
		}
		return nil
	case "concurrent":
		streams, ok, err := number(st["streams"])
		if err != nil || !ok {
			return fmt.Errorf("%s.streams: missing or not a number for a concurrent strategy", field)
		}
		p.Kind, p.Concurrency = LoadConcurrency, streams
		if !math.IsNaN(achieved) {
			p.Rate = achieved
		}
		return nil
	case "throughput":
		p.MaxThroughput = true
	}
	p.Strategy = typ
	return useAchieved()
}

func joinPath(keys []string) string {
	s := keys[0]
	for _, k := range keys[1:] {
		s += "." + k
	}
	return s
}

// guideType is the strategy's type_ ("constant", "poisson").
func guideType(b map[string]json.RawMessage) string {
	return firstString(b, []string{"config", "strategy", "type_"}, []string{"args", "strategy", "type_"})
}

// guideTokens reads a token-count summary {mean, percentiles}.
func guideTokens(metrics map[string]json.RawMessage, name string) Dist {
	d, err := guideMetric(metrics, name)
	if err != nil || d == nil || d.Mean == nil {
		return Dist{}
	}
	out := Dist{Known: true, Mean: *d.Mean, Pcts: map[float64]float64{}}
	for k, v := range d.Percentiles {
		if pct, ok := guidePct[k]; ok && pct != 95 && pct != 99.9 {
			out.Pcts[pct] = v
		}
	}
	return out
}

// epoch is a Unix time in seconds with its fraction.
func epoch(s float64) time.Time {
	sec, frac := math.Modf(s)
	return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC()
}
