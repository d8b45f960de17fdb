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

// LoadKind is how a round's load was driven: an open loop at a request
// rate, or a closed loop of a number of requests in flight. A sweep is one
// kind; the two have different knees and are never merged.
type LoadKind string

const (
	LoadRate        LoadKind = "rate"
	LoadConcurrency LoadKind = "concurrency"
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

// Point is one round of a sweep: a load held for Duration, and what the
// server did under it.
type Point struct {
	Round int // 1-based, in increasing load within its sweep
	Kind  LoadKind
	// Rate is the round's request rate, req/s: the rate the tool offered
	// where it records one (RateSet), else the rate it achieved.
	Rate    float64
	RateSet bool
	// MaxThroughput marks a round with no offered rate at all: every
	// request sent at once (vLLM's --request-rate inf without a
	// concurrency cap, GuideLLM's throughput strategy). Rate is then the
	// achieved rate, and the round sorts after every rated round.
	MaxThroughput bool
	// Strategy names how the tool drove a round whose rate it did not set
	// ("synchronous", "throughput", a ramp); empty otherwise.
	Strategy string
	// Concurrency is the requests the tool held in flight, for
	// concurrency rounds (and a cap on rate rounds where it set one).
	Concurrency float64
	Duration    float64 // seconds the tool measured the round over
	// Throughput is the tool's own output tokens per second of
	// successful requests over its measurement window.
	Throughput float64
	// Counted is the tool's count of successful requests in that window
	// (CountKnown false when the file does not publish one).
	Counted    int
	CountKnown bool
	// Percentiles holds the file's latency percentiles in seconds, by
	// objective kind and percentile (99 for P99, 50 for the median).
	Percentiles map[goodput.Kind]map[float64]float64
	// Requests is nil when the file carries only percentiles. It holds
	// the requests of the tool's measurement window where the file says
	// which those are.
	Requests []Request
	// EnergyJoules is the GPU energy over the point's window, 0 when the
	// file has none.
	EnergyJoules float64
	Source       string // file the point came from
	Version      string // the tool and version that wrote it, as the file says
}

// Load is the round's position on its sweep's axis: the concurrency of a
// concurrency round, the rate of a rate round (+Inf for max throughput).
func (p *Point) Load() float64 {
	switch {
	case p.Kind == LoadConcurrency:
		return p.Concurrency
	case p.MaxThroughput:
		return math.Inf(1)
	}
	return p.Rate
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

// Sweep is the rounds of one or more files of one tool, in increasing
// load. It may hold a rate sweep and a concurrency sweep at once (Kinds
// says which); Split separates them, and Judge refuses a mixed one.
type Sweep struct {
	Tool   Tool
	Points []Point
}

// Kinds lists the load kinds of the sweep's rounds, rate first.
func (s *Sweep) Kinds() []LoadKind {
	var out []LoadKind
	for _, k := range []LoadKind{LoadRate, LoadConcurrency} {
		if slices.ContainsFunc(s.Points, func(p Point) bool { return p.Kind == k }) {
			out = append(out, k)
		}
	}
	return out
}

// Split returns one sweep per load kind, rate first, each with its
// rounds numbered from 1.
func (s *Sweep) Split() []*Sweep {
	var out []*Sweep
	for _, k := range s.Kinds() {
		sub := &Sweep{Tool: s.Tool}
		for _, p := range s.Points {
			if p.Kind == k {
				sub.Points = append(sub.Points, p)
			}
		}
		renumber(sub.Points)
		out = append(out, sub)
	}
	return out
}

func renumber(pts []Point) {
	for i := range pts {
		pts[i].Round = i + 1
	}
}

// Read loads sweep files: one GuideLLM report (JSON or YAML) holds a whole
// sweep; AIPerf and `vllm bench serve` write one file per round, so a
// sweep is several of them. An AIPerf run directory, or a
// profile_export_aiperf.json with profile_export.jsonl beside it, adds the
// per-request records. Rounds are ordered by load kind, then load; each
// kind's rounds are numbered from 1.
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
		if a.Kind != b.Kind {
			if a.Kind == LoadRate {
				return -1
			}
			return 1
		}
		la, lb := a.Load(), b.Load()
		switch {
		case la < lb:
			return -1
		case la > lb:
			return 1
		case a.MaxThroughput && b.MaxThroughput && a.Rate != b.Rate:
			if a.Rate < b.Rate {
				return -1
			}
			return 1
		}
		return 0
	})
	for _, k := range sw.Kinds() {
		n := 0
		for i := range sw.Points {
			if sw.Points[i].Kind == k {
				n++
				sw.Points[i].Round = n
			}
		}
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
	case isNumber(probe["output_throughput"]) && probe["request_throughput"] != nil:
		p, err := parseVLLMBench(body)
		return ToolVLLMBench, p, err
	case probe["request_throughput"] != nil || probe["output_token_throughput"] != nil:
		p, err := parseAIPerf(body, path)
		return ToolAIPerf, p, err
	}
	return "", nil, errors.New("not a GuideLLM report, an AIPerf profile export or a `vllm bench serve` result")
}

func isNumber(raw json.RawMessage) bool {
	var f float64
	return raw != nil && json.Unmarshal(raw, &f) == nil
}

// finite reports a usable non-negative number.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

func checkPoint(p *Point, what string) error {
	if p.Kind == LoadConcurrency {
		if !finite(p.Concurrency) || p.Concurrency < 1 {
			return fmt.Errorf("%s: no usable concurrency (%v)", what, p.Concurrency)
		}
	} else if !finite(p.Rate) || p.Rate == 0 {
		return fmt.Errorf("%s: no usable request rate (%v)", what, p.Rate)
	}
	if !finite(p.Throughput) {
		return fmt.Errorf("%s: no usable output throughput (%v)", what, p.Throughput)
	}
	if p.CountKnown && p.Counted < 0 {
		return fmt.Errorf("%s: negative request count %d", what, p.Counted)
	}
	for i, r := range p.Requests {
		if !finite(r.OutputTokens) {
			return fmt.Errorf("%s: request %d has output tokens %v", what, i, r.OutputTokens)
		}
	}
	return nil
}
