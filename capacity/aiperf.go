package capacity

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// AIPerf writes profile_export_aiperf.json, one run at one load, with
// profile_export.jsonl (one record a request) beside it. Checked against
// ai-dynamo/aiperf's source (LoadGeneratorConfig: request_rate,
// concurrency) and against real exports of 0.8.0 (schema_version 1.0)
// and 0.10.0 (schema_version 1.3) (testdata/real/aiperf):
//
//   - each metric is an object {unit, avg, p1 … p99, min, max, std};
//     output_token_throughput.avg is the tool's throughput
//     (total_output_tokens / benchmark_duration), request_count.avg its
//     count of successful requests, request_throughput.avg the achieved
//     rate;
//   - the load is input_config.loadgen.{request_rate, concurrency} in 0.8
//     (and in the source's LoadGeneratorConfig before it), and
//     input_config.phases[] in 0.10: one entry per phase ({name, type,
//     rate | concurrency, exclude_from_results}), the warmup excluded
//     from the results; a file with phases[] is read from it, any other
//     from loadgen;
//   - a record is {metadata: {benchmark_phase, …}, metrics: {name: {value,
//     unit}}, error}; warmup records carry benchmark_phase "warmup".
//
// GPU power comes from telemetry_data when --gpu-telemetry was given.

type aiperfStat struct {
	Unit string   `json:"unit"`
	Avg  *float64 `json:"avg"`
}

// aiperfKinds: AIPerf's (and GenAI-Perf's) inter_token_latency is per
// request, (request_latency - time_to_first_token) / (output tokens - 1),
// and its summary's percentiles are over requests: TPOT as vLLM defines
// it, and the per-request mean gap that itl is judged on.
var aiperfKinds = map[string][]goodput.Kind{
	"time_to_first_token": {goodput.KindTTFT}, "inter_token_latency": {goodput.KindITL, goodput.KindTPOT},
	"request_latency": {goodput.KindE2E},
}

func readAIPerf(path string) ([]Point, error) {
	body, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return parseAIPerf(body, path)
}

func aiperfSeconds(unit string, v float64) (float64, bool) {
	switch unit {
	case "ms":
		return v / 1000, true
	case "ns":
		return v / 1e9, true
	case "s", "sec":
		return v, true
	}
	return 0, false
}

// aiperfAvg decodes <name>.avg; absent is (0, false).
func aiperfAvg(top map[string]json.RawMessage, name string) (float64, bool, error) {
	raw, err := path(top, name, "avg")
	if err != nil {
		return 0, false, err
	}
	v, ok, err := number(raw)
	if err != nil {
		return 0, false, fmt.Errorf("%s.avg: %w", name, err)
	}
	return v, ok, nil
}

func parseAIPerf(body []byte, path string) ([]Point, error) {
	top, err := obj(body)
	if err != nil {
		return nil, fmt.Errorf("AIPerf profile export: %w", err)
	}
	version := "AIPerf"
	if t, _ := classify(body); t == ToolGenAIPerf {
		version = "GenAI-Perf export"
	}
	if raw := top["aiperf_version"]; raw != nil {
		var v string
		if json.Unmarshal(raw, &v) == nil && v != "" {
			version += " " + v
		}
	}
	pts, err := aiperfPoint(top, path)
	if err != nil {
		return nil, fmt.Errorf("%s profile export: %w", version, err)
	}
	pts.Version = version
	if err := checkPoint(&pts, version+" profile export"); err != nil {
		return nil, err
	}
	return []Point{pts}, nil
}

func aiperfPoint(top map[string]json.RawMessage, file string) (Point, error) {
	p := Point{Kind: LoadRate}
	thr, ok, err := aiperfAvg(top, "output_token_throughput")
	if err != nil {
		return p, err
	}
	if !ok {
		return p, errors.New("output_token_throughput.avg: missing")
	}
	p.Throughput = thr
	achieved, hasAchieved, err := aiperfAvg(top, "request_throughput")
	if err != nil {
		return p, err
	}
	if d, ok, err := aiperfAvg(top, "benchmark_duration"); err != nil {
		return p, err
	} else if ok {
		p.Duration = d
	}
	raw, err := path(top, "request_count", "avg")
	if err != nil {
		return p, err
	}
	if n, ok, err := count(raw); err != nil {
		return p, fmt.Errorf("request_count.avg: %w", err)
	} else if ok {
		p.Counted, p.CountKnown = n, true
	}

	rate, conc, field, err := aiperfLoad(top)
	if err != nil {
		return p, err
	}
	switch {
	case rate > 0:
		p.Rate, p.RateSet, p.Concurrency = rate, true, conc
	case conc > 0:
		p.Kind, p.Concurrency = LoadConcurrency, conc
		if hasAchieved {
			p.Rate = achieved
		}
	case hasAchieved:
		p.Rate = achieved // no load recorded: the achieved rate stands for it
	default:
		return p, fmt.Errorf("%s records no request_rate or concurrency, and request_throughput.avg is missing", field)
	}

	for name, kinds := range aiperfKinds {
		m, err := obj(top[name])
		if err != nil {
			return p, fmt.Errorf("%s: %w", name, err)
		}
		var unit string
		_ = json.Unmarshal(m["unit"], &unit)
		for k, raw := range m {
			if !strings.HasPrefix(k, "p") {
				continue
			}
			var pct float64
			if _, err := fmt.Sscanf(k[1:], "%g", &pct); err != nil || !(pct > 0 && pct < 100) {
				continue
			}
			v, ok, err := number(raw)
			if err != nil {
				return p, fmt.Errorf("%s.%s: %w", name, k, err)
			}
			if s, known := aiperfSeconds(unit, v); ok && known {
				for _, kind := range kinds {
					p.setPct(kind, pct, s)
				}
			}
		}
	}

	p.Facts = aiperfFacts(top, &p)

	if p.Duration > 0 {
		var t struct {
			Endpoints map[string]struct {
				GPUs map[string]struct {
					Metrics map[string]aiperfStat `json:"metrics"`
				} `json:"gpus"`
			} `json:"endpoints"`
		}
		if json.Unmarshal(top["telemetry_data"], &t) == nil {
			var watts float64
			for _, ep := range t.Endpoints {
				for _, g := range ep.GPUs {
					if m, ok := g.Metrics["gpu_power_usage"]; ok && m.Avg != nil && finite(*m.Avg) {
						watts += *m.Avg
					}
				}
			}
			p.EnergyJoules = watts * p.Duration
		}
	}
	if file != "" {
		reqs, err := readAIPerfRecords(filepath.Join(filepath.Dir(file), "profile_export.jsonl"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return p, err
		}
		p.Requests = reqs
	}
	return p, nil
}

// aiperfLoad reads the load the run was given: the measured phase of
// input_config.phases[] (0.10 and later), else input_config.loadgen.
// field names where it was found, for errors.
func aiperfLoad(top map[string]json.RawMessage) (rate, conc float64, field string, err error) {
	field = "input_config.loadgen"
	rawPhases, err := path(top, "input_config", "phases")
	if err != nil {
		return 0, 0, field, err
	}
	if rawPhases != nil {
		field = "input_config.phases"
		var phases []map[string]json.RawMessage
		if err := json.Unmarshal(rawPhases, &phases); err != nil {
			return 0, 0, field, fmt.Errorf("%s: not a list of objects", field)
		}
		found := false
		for i, ph := range phases {
			var excluded bool
			_ = json.Unmarshal(ph["exclude_from_results"], &excluded)
			var name string
			_ = json.Unmarshal(ph["name"], &name)
			if excluded || name == "warmup" {
				continue
			}
			r, _, err := number(ph["rate"])
			if err != nil {
				return 0, 0, field, fmt.Errorf("%s[%d].rate: %w", field, i, err)
			}
			c, _, err := number(ph["concurrency"])
			if err != nil {
				return 0, 0, field, fmt.Errorf("%s[%d].concurrency: %w", field, i, err)
			}
			if found && (r != rate || c != conc) {
				return 0, 0, field, fmt.Errorf("%s: more than one measured phase, at different loads; give one run per load", field)
			}
			rate, conc, found = r, c, true
		}
		return rate, conc, field, nil
	}
	lg, err := path(top, "input_config", "loadgen")
	if err != nil {
		return 0, 0, field, err
	}
	if lg == nil {
		// GenAI-Perf keeps the load at the top of input_config
		field = "input_config"
		if lg, err = path(top, "input_config"); err != nil {
			return 0, 0, field, err
		}
	}
	m, err := obj(lg)
	if err != nil {
		return 0, 0, field, fmt.Errorf("%s: %w", field, err)
	}
	if rate, _, err = number(m["request_rate"]); err != nil {
		return 0, 0, field, fmt.Errorf("%s.request_rate: %w", field, err)
	}
	if conc, _, err = number(m["concurrency"]); err != nil {
		return 0, 0, field, fmt.Errorf("%s.concurrency: %w", field, err)
	}
	return rate, conc, field, nil
}

type aiperfValue struct {
	Value json.RawMessage `json:"value"`
	Unit  string          `json:"unit"`
}

func (v aiperfValue) seconds() float64 {
	var f float64
	if json.Unmarshal(v.Value, &f) != nil {
		return math.NaN()
	}
	if s, ok := aiperfSeconds(v.Unit, f); ok {
		return s
	}
	return math.NaN()
}

// readAIPerfRecords reads the records of the measured phase; warmup
// records (metadata.benchmark_phase "warmup") are not the population the
// export's metrics count.
func readAIPerfRecords(path string) ([]Request, error) {
	body, err := readFile(path)
	if err != nil {
		return nil, err
	}
	var out []Request
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var rec struct {
			Metadata struct {
				Phase     string `json:"benchmark_phase"`
				Cancelled bool   `json:"was_cancelled"`
			} `json:"metadata"`
			Metrics map[string]aiperfValue `json:"metrics"`
			Error   json.RawMessage        `json:"error"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if rec.Metadata.Phase != "" && rec.Metadata.Phase != "profiling" {
			continue
		}
		q := Request{TTFT: math.NaN(), TPOT: math.NaN(), ITL: math.NaN(), E2E: math.NaN()}
		if !isNull(rec.Error) || rec.Metadata.Cancelled {
			q.Failed = true
			out = append(out, q)
			continue
		}
		if v, ok := rec.Metrics["time_to_first_token"]; ok {
			q.TTFT = v.seconds()
		}
		if v, ok := rec.Metrics["inter_token_latency"]; ok {
			q.ITL = v.seconds()
			q.TPOT = q.ITL // AIPerf's per-request ITL is the mean gap after the first token
		}
		if v, ok := rec.Metrics["request_latency"]; ok {
			q.E2E = v.seconds()
		}
		v, ok := rec.Metrics["output_sequence_length"]
		if !ok {
			v, ok = rec.Metrics["output_token_count"]
		}
		if !ok || json.Unmarshal(v.Value, &q.OutputTokens) != nil {
			return nil, fmt.Errorf("%s:%d: metrics.output_sequence_length: missing", path, line)
		}
		out = append(out, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// aiperfFacts reads a run's conditions: the model, the endpoint, the
// input and output sequence lengths (avg and percentiles), the arrival
// process of the measured phase (0.10), or of loadgen (0.8), and the
// warmup left out.
func aiperfFacts(top map[string]json.RawMessage, p *Point) Facts {
	f := Facts{Model: firstString(top, []string{"input_config", "endpoint", "model_names"}, []string{"input_config", "model"})}
	if raw, _ := path(top, "input_config", "models", "items"); raw != nil {
		var items []struct{ Name string }
		if json.Unmarshal(raw, &items) == nil && len(items) > 0 {
			f.Model = items[0].Name
		}
	}
	var stack []string
	for _, k := range [][]string{{"input_config", "endpoint", "type"}, {"input_config", "endpoint_type"}, {"input_config", "backend"}, {"input_config", "service_kind"}} {
		if v := firstString(top, k); v != "" {
			stack = append(stack, k[len(k)-1]+" "+v)
		}
	}
	f.Stack = strings.Join(stack, ", ")
	f.Endpoint = firstString(top, []string{"input_config", "endpoint", "urls"}, []string{"input_config", "endpoint", "url"}, []string{"input_config", "u"}, []string{"input_config", "url"})
	f.InputTokens, f.OutputTokens = aiperfDist(top, "input_sequence_length"), aiperfDist(top, "output_sequence_length")
	if m, _ := obj(top["request_latency"]); m != nil {
		var unit string
		_ = json.Unmarshal(m["unit"], &unit)
		if v, ok, _ := number(m["avg"]); ok {
			if sec, known := aiperfSeconds(unit, v); known {
				f.MeanE2E = sec
			}
		}
	}
	if raw, _ := path(top, "input_config", "phases"); raw != nil {
		var phases []struct {
			Name     string   `json:"name"`
			Type     string   `json:"type"`
			Exclude  bool     `json:"exclude_from_results"`
			Requests *float64 `json:"requests"`
		}
		_ = json.Unmarshal(raw, &phases)
		for _, ph := range phases {
			if ph.Exclude || ph.Name == "warmup" {
				f.Warmup = "a warmup phase excluded"
				if ph.Requests != nil {
					f.Warmup = fmt.Sprintf("a warmup phase of %g requests excluded", *ph.Requests)
				}
				continue
			}
			if ph.Type != "" && p.Kind == LoadRate {
				f.Arrival = ph.Type
			}
		}
	} else {
		if v := firstString(top, []string{"input_config", "loadgen", "request_rate_mode"}); v != "" && p.Kind == LoadRate {
			f.Arrival = v
		}
		for _, k := range [][]string{{"input_config", "loadgen", "warmup_request_count"}, {"input_config", "warmup_request_count"}} {
			if raw, _ := path(top, k...); raw != nil {
				if n, ok, _ := number(raw); ok {
					f.Warmup = fmt.Sprintf("%g warmup requests excluded", n)
				}
			}
		}
	}
	if p.Kind == LoadConcurrency {
		f.Arrival = ArrivalClosed
	}
	return f
}

// aiperfDist reads a token-count metric {avg, pNN}.
func aiperfDist(top map[string]json.RawMessage, name string) Dist {
	m, err := obj(top[name])
	if err != nil || m == nil {
		return Dist{}
	}
	avg, ok, _ := number(m["avg"])
	if !ok {
		return Dist{}
	}
	d := Dist{Known: true, Mean: avg, Pcts: map[float64]float64{}}
	for _, pct := range []float64{50, 90, 99} {
		if v, ok, _ := number(m[fmt.Sprintf("p%g", pct)]); ok {
			d.Pcts[pct] = v
		}
	}
	return d
}
