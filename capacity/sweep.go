package capacity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// Tool names the load generator a sweep file came from.
type Tool string

const (
	ToolGuideLLM  Tool = "guidellm"
	ToolAIPerf    Tool = "aiperf"
	ToolVLLMBench Tool = "vllm-bench-serve"
)

// MaxFileSize bounds what Read loads: a detailed sweep with per-request
// data is tens of megabytes; anything far larger is not a sweep.
const MaxFileSize = 512 << 20

// Request is one request of a point, where the file carries per-request
// data. Latencies are in seconds; NaN where the file has none.
type Request struct {
	TTFT, TPOT, ITL, E2E float64
	OutputTokens         float64
	Failed               bool
}

// Point is one step of a sweep: an offered rate held for Duration, and
// what the server did under it.
type Point struct {
	Round    int     // 1-based, in increasing rate
	Rate     float64 // offered load, req/s
	Duration float64 // seconds the point was measured over
	// Throughput is output tokens per second of successful requests.
	Throughput float64
	// Percentiles holds the file's latency percentiles in seconds, by
	// objective kind and percentile (99 for P99, 50 for the median).
	Percentiles map[goodput.Kind]map[float64]float64
	// Requests is nil when the file carries only percentiles.
	Requests []Request
	// EnergyJoules is the GPU energy over the point's window, 0 when the
	// file has none.
	EnergyJoules float64
	Source       string // file the point came from
}

// Percentile returns the p-th percentile of kind in seconds.
func (p *Point) Percentile(kind goodput.Kind, pct float64) (float64, bool) {
	v, ok := p.Percentiles[kind][pct]
	return v, ok
}

func (p *Point) setPct(kind goodput.Kind, pct, seconds float64) {
	if math.IsNaN(seconds) || math.IsInf(seconds, 0) || seconds < 0 {
		return
	}
	if p.Percentiles == nil {
		p.Percentiles = map[goodput.Kind]map[float64]float64{}
	}
	if p.Percentiles[kind] == nil {
		p.Percentiles[kind] = map[float64]float64{}
	}
	p.Percentiles[kind][pct] = seconds
}

// Sweep is the points of one or more files of one tool, in increasing rate.
type Sweep struct {
	Tool   Tool
	Points []Point
}

// Read loads sweep files: one GuideLLM report (JSON or YAML) holds a whole
// sweep; AIPerf and `vllm bench serve` write one file per rate, so a sweep
// is several of them. An AIPerf run directory, or a profile_export_aiperf.json
// with profile_export.jsonl beside it, adds the per-request records.
func Read(paths ...string) (*Sweep, error) {
	if len(paths) == 0 {
		return nil, errors.New("no sweep files given")
	}
	sw := &Sweep{}
	for _, path := range paths {
		tool, pts, err := readOne(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if sw.Tool != "" && sw.Tool != tool {
			return nil, fmt.Errorf("%s: a %s file in a %s sweep; give files of one tool", path, tool, sw.Tool)
		}
		sw.Tool = tool
		for i := range pts {
			pts[i].Source = path
		}
		sw.Points = append(sw.Points, pts...)
	}
	if len(sw.Points) == 0 {
		return nil, errors.New("the files hold no sweep points")
	}
	slices.SortStableFunc(sw.Points, func(a, b Point) int {
		switch {
		case a.Rate < b.Rate:
			return -1
		case a.Rate > b.Rate:
			return 1
		}
		return 0
	})
	for i := range sw.Points {
		sw.Points[i].Round = i + 1
	}
	return sw, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("larger than %d MiB; not a sweep result", MaxFileSize>>20)
	}
	return b, nil
}

func readOne(path string) (Tool, []Point, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		p, err := readAIPerf(filepath.Join(path, "profile_export_aiperf.json"))
		return ToolAIPerf, p, err
	}
	body, err := readFile(path)
	if err != nil {
		return "", nil, err
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return "", nil, errors.New("empty file")
	}
	if trimmed[0] != '{' {
		// GuideLLM also writes its report as YAML.
		if body, err = yamlToJSON(body); err != nil {
			return "", nil, fmt.Errorf("neither JSON nor YAML: %w", err)
		}
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(body, &probe); err != nil {
		return "", nil, fmt.Errorf("not a JSON object: %w", err)
	}
	switch {
	case probe["benchmarks"] != nil:
		p, err := parseGuideLLM(body)
		return ToolGuideLLM, p, err
	case probe["output_throughput"] != nil && probe["request_throughput"] != nil:
		p, err := parseVLLMBench(body)
		return ToolVLLMBench, p, err
	case probe["request_throughput"] != nil || probe["output_token_throughput"] != nil:
		p, err := parseAIPerf(body, path)
		return ToolAIPerf, p, err
	}
	return "", nil, errors.New("not a GuideLLM report, an AIPerf profile export or a `vllm bench serve` result")
}

// finite reports a usable non-negative number.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

func checkPoint(p *Point, what string) error {
	if !finite(p.Rate) || p.Rate == 0 {
		return fmt.Errorf("%s: no usable request rate (%v)", what, p.Rate)
	}
	if !finite(p.Throughput) {
		return fmt.Errorf("%s: no usable output throughput (%v)", what, p.Throughput)
	}
	if p.Requests != nil && (!finite(p.Duration) || p.Duration == 0) {
		return fmt.Errorf("%s: per-request data without a duration", what)
	}
	for i, r := range p.Requests {
		if !finite(r.OutputTokens) {
			return fmt.Errorf("%s: request %d has output tokens %v", what, i, r.OutputTokens)
		}
	}
	return nil
}
