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

// AIPerf (v0.3 to v0.5) writes profile_export_aiperf.json, one run at one
// load: each metric an object {unit, avg, p1…p99, min, max, std}, the
// load in input_config.loadgen, and GPU telemetry when --gpu-telemetry
// was given. The per-request records are in profile_export.jsonl beside
// it: {metadata, metrics: {name: {value, unit}}, error}.
type aiperfStat struct {
	Unit string   `json:"unit"`
	Avg  *float64 `json:"avg"`
}

type aiperfExport struct {
	RequestThroughput *aiperfStat `json:"request_throughput"`
	OutputThroughput  *aiperfStat `json:"output_token_throughput"`
	Duration          *aiperfStat `json:"benchmark_duration"`
	InputConfig       struct {
		Loadgen struct {
			RequestRate *float64 `json:"request_rate"`
		} `json:"loadgen"`
	} `json:"input_config"`
	Telemetry *struct {
		Endpoints map[string]struct {
			GPUs map[string]struct {
				Metrics map[string]aiperfStat `json:"metrics"`
			} `json:"gpus"`
		} `json:"endpoints"`
	} `json:"telemetry_data"`
}

var aiperfKinds = map[string]goodput.Kind{
	"time_to_first_token": goodput.KindTTFT, "inter_token_latency": goodput.KindITL,
	"request_latency": goodput.KindE2E,
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

func parseAIPerf(body []byte, path string) ([]Point, error) {
	var e aiperfExport
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, fmt.Errorf("AIPerf profile export: %w", err)
	}
	var p Point
	switch {
	case e.InputConfig.Loadgen.RequestRate != nil:
		p.Rate = *e.InputConfig.Loadgen.RequestRate
	case e.RequestThroughput != nil && e.RequestThroughput.Avg != nil:
		p.Rate = *e.RequestThroughput.Avg // a concurrency run: achieved rate
	}
	if e.OutputThroughput == nil || e.OutputThroughput.Avg == nil {
		return nil, errors.New("no output_token_throughput.avg")
	}
	p.Throughput = *e.OutputThroughput.Avg
	if e.Duration != nil && e.Duration.Avg != nil {
		p.Duration = *e.Duration.Avg
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(body, &raw)
	for name, kind := range aiperfKinds {
		var m map[string]any
		if json.Unmarshal(raw[name], &m) != nil {
			continue
		}
		unit, _ := m["unit"].(string)
		for k, v := range m {
			f, ok := v.(float64)
			if !ok || !strings.HasPrefix(k, "p") {
				continue
			}
			var pct float64
			if _, err := fmt.Sscanf(k[1:], "%g", &pct); err != nil || !(pct > 0 && pct < 100) {
				continue
			}
			if s, ok := aiperfSeconds(unit, f); ok {
				p.setPct(kind, pct, s)
			}
		}
	}
	if t := e.Telemetry; t != nil && p.Duration > 0 {
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
	if path != "" {
		reqs, err := readAIPerfRecords(filepath.Join(filepath.Dir(path), "profile_export.jsonl"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		p.Requests = reqs
	}
	if err := checkPoint(&p, "profile export"); err != nil {
		return nil, err
	}
	return []Point{p}, nil
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
			Metrics map[string]aiperfValue `json:"metrics"`
			Error   json.RawMessage        `json:"error"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		q := Request{TTFT: math.NaN(), TPOT: math.NaN(), ITL: math.NaN(), E2E: math.NaN()}
		if len(rec.Error) > 0 && string(rec.Error) != "null" {
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
			return nil, fmt.Errorf("%s:%d: no output_sequence_length", path, line)
		}
		out = append(out, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}
