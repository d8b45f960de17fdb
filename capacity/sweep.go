package capacity

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// Tool names the load generator a sweep file came from.
type Tool string

const (
	ToolGuideLLM  Tool = "guidellm"
	ToolAIPerf    Tool = "aiperf"
	ToolVLLMBench Tool = "vllm-bench-serve"
	ToolGenAIPerf Tool = "genai-perf"
	ToolSGLang    Tool = "sglang-bench-serving"
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
	// Start and End bound the round's measurement window where the file
	// records them as absolute times (zero otherwise); EnergyNote says
	// why a round has no energy from Prometheus.
	Start, End time.Time
	EnergyNote string
	Source     string // file the point came from
	Index      int    // its position in that file, from 0
	Version    string // the tool and version that wrote it, as the file says
	// Setting names what sets the round's sweep apart from others given
	// with it: an SGLang data set, the serve parameters of one `vllm
	// bench sweep` setting. Rounds of different settings are different
	// sweeps; "" for one.
	Setting string
	// Facts are the conditions the round's numbers hold under.
	Facts Facts
	// Failed marks a round with no successful request, or whose achieved
	// rate was 0: a round that missed the SLO, whatever its percentiles
	// say (a tool writes 0 for the latencies of no request).
	Failed bool
	// NoLoad marks a failed round whose file records no usable load
	// (neither a rate, a concurrency nor an achieved rate): it is listed,
	// and never taken for a load on the sweep's axis.
	NoLoad bool
}

// Load is the round's position on its sweep's axis: the concurrency of a
// concurrency round, the rate of a rate round (+Inf for max throughput).
func (p *Point) Load() float64 {
	switch {
	case p.NoLoad:
		return math.NaN()
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

// Settings lists the settings of the sweep's rounds, sorted.
func (s *Sweep) Settings() []string {
	var out []string
	for _, p := range s.Points {
		if !slices.Contains(out, p.Setting) {
			out = append(out, p.Setting)
		}
	}
	slices.Sort(out)
	return out
}

// Split returns one sweep per load kind and setting, rate first, each
// with its rounds numbered from 1.
func (s *Sweep) Split() []*Sweep {
	var out []*Sweep
	for _, k := range s.Kinds() {
		for _, set := range s.Settings() {
			sub := &Sweep{Tool: s.Tool}
			for _, p := range s.Points {
				if p.Kind == k && p.Setting == set {
					sub.Points = append(sub.Points, p)
				}
			}
			if len(sub.Points) == 0 {
				continue
			}
			renumber(sub.Points)
			out = append(out, sub)
		}
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
// per-request records. A `vllm bench sweep` summary (a JSON array of
// results) and SGLang's bench_serving output (JSON lines, one run a line)
// hold several rounds. Rounds are ordered by load kind, then load (then
// file name and place in the file, so the order the files are given in
// changes nothing); each kind's rounds are numbered from 1.
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
			pts[i].Source, pts[i].Index = path, i
		}
		sw.Points = append(sw.Points, pts...)
	}
	if len(sw.Points) == 0 {
		return nil, errors.New("the files hold no sweep points")
	}
	slices.SortFunc(sw.Points, comparePoints)
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

// Shapes is what Read reads, for the message on a file of another shape.
const Shapes = "a GuideLLM benchmarks report (JSON or YAML, benchmarks[]); an AIPerf run directory or " +
	"profile_export_aiperf.json; a GenAI-Perf profile_export_genai_perf.json; a `vllm bench serve` result " +
	"(benchmark_serving.py --save-result); a `vllm bench sweep` summary.json (a JSON array of those); " +
	"SGLang bench_serving output (JSON lines, one run a line)"

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
	var values []json.RawMessage
	if trimmed[0] == '{' || trimmed[0] == '[' {
		if values, err = jsonValues(pyJSON(trimmed)); err != nil {
			return "", nil, fmt.Errorf("not JSON (%w); the files read are: %s", err, Shapes)
		}
	} else {
		// GuideLLM also writes its report as YAML.
		y, err := yamlToJSON(body)
		if err != nil {
			return "", nil, fmt.Errorf("neither JSON nor YAML (%w); the files read are: %s", err, Shapes)
		}
		values = []json.RawMessage{y}
	}
	if len(values) == 1 && bytes.HasPrefix(bytes.TrimSpace(values[0]), []byte("[")) {
		// a vllm bench sweep summary: the runs of one setting
		var runs []json.RawMessage
		if err := json.Unmarshal(values[0], &runs); err != nil || len(runs) == 0 {
			return "", nil, fmt.Errorf("a JSON array that is not a list of runs; the files read are: %s", Shapes)
		}
		var out []Point
		for i, raw := range runs {
			tool, probe := classify(raw)
			if tool != ToolVLLMBench {
				return "", nil, fmt.Errorf("element %d of the array is not a `vllm bench serve` result; the files read are: %s", i, Shapes)
			}
			p, err := parseVLLMBench(probe)
			if err != nil {
				return "", nil, fmt.Errorf("vllm bench sweep summary, run %d: %w", i, err)
			}
			for j := range p {
				p[j].Version = "vllm bench sweep summary"
			}
			out = append(out, p...)
		}
		return ToolVLLMBench, out, nil
	}
	if len(values) > 1 {
		var out []Point
		for i, raw := range values {
			tool, probe := classify(raw)
			if tool != ToolSGLang {
				return "", nil, fmt.Errorf("line %d is not an SGLang bench_serving result; the files read are: %s", i+1, Shapes)
			}
			p, err := parseSGLang(probe)
			if err != nil {
				return "", nil, fmt.Errorf("SGLang bench_serving output, line %d: %w", i+1, err)
			}
			out = append(out, p)
		}
		return ToolSGLang, out, nil
	}
	tool, probe := classify(values[0])
	switch tool {
	case ToolGuideLLM:
		p, err := parseGuideLLM(values[0])
		return tool, p, err
	case ToolSGLang:
		p, err := parseSGLang(probe)
		return tool, []Point{p}, err
	case ToolVLLMBench:
		p, err := parseVLLMBench(probe)
		return tool, p, err
	case ToolAIPerf, ToolGenAIPerf:
		p, err := parseAIPerf(values[0], path)
		return tool, p, err
	}
	return "", nil, fmt.Errorf("not a result file of a known shape; the files read are: %s", Shapes)
}

// classify names the tool that wrote one JSON object, and returns the
// object; "" when it is none the readers know.
func classify(raw json.RawMessage) (Tool, map[string]json.RawMessage) {
	probe, err := obj(raw)
	if err != nil || probe == nil {
		return "", nil
	}
	switch {
	case probe["benchmarks"] != nil:
		return ToolGuideLLM, probe
	case probe["total_output_tokens_retokenized"] != nil || probe["backend"] != nil && probe["dataset_name"] != nil &&
		isNumber(probe["output_throughput"]) && probe["endpoint_type"] == nil:
		return ToolSGLang, probe
	case isNumber(probe["output_throughput"]) && (probe["request_throughput"] != nil || probe["endpoint_type"] != nil):
		return ToolVLLMBench, probe
	case probe["request_throughput"] != nil || probe["output_token_throughput"] != nil:
		if probe["aiperf_version"] == nil && probe["schema_version"] == nil {
			if ic, _ := obj(probe["input_config"]); ic != nil && ic["loadgen"] == nil && ic["phases"] == nil {
				return ToolGenAIPerf, probe
			}
		}
		return ToolAIPerf, probe
	}
	return "", probe
}

// jsonValues splits a JSON document, or JSON lines, into its values.
func jsonValues(b []byte) ([]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var out []json.RawMessage
	for {
		var v json.RawMessage
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// pyJSON turns the bare Infinity, -Infinity and NaN that Python's json
// module writes (SGLang's request_rate of an uncapped run) into JSON: the
// strings "Infinity" and "-Infinity", and null.
func pyJSON(b []byte) []byte {
	if !bytes.Contains(b, []byte("Infinity")) && !bytes.Contains(b, []byte("NaN")) {
		return b
	}
	var out bytes.Buffer
	inStr, esc := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			out.WriteByte(c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
		case bytes.HasPrefix(b[i:], []byte("-Infinity")):
			out.WriteString(`"-Infinity"`)
			i += len("-Infinity") - 1
			continue
		case bytes.HasPrefix(b[i:], []byte("Infinity")):
			out.WriteString(`"Infinity"`)
			i += len("Infinity") - 1
			continue
		case bytes.HasPrefix(b[i:], []byte("NaN")):
			out.WriteString("null")
			i += len("NaN") - 1
			continue
		}
		out.WriteByte(c)
	}
	return out.Bytes()
}

func isNumber(raw json.RawMessage) bool {
	var f float64
	return raw != nil && json.Unmarshal(raw, &f) == nil
}

// finite reports a usable non-negative number.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

// checkPoint marks a round with no successful request, or an achieved
// rate of 0, as failed (a missed round, never an error), and one whose
// file records no usable load as listed without one; it refuses only what
// is malformed.
func checkPoint(p *Point, what string) error {
	if p.CountKnown && p.Counted < 0 {
		return fmt.Errorf("%s: negative request count %d", what, p.Counted)
	}
	if p.CountKnown && p.Counted == 0 ||
		p.Requests != nil && !slices.ContainsFunc(p.Requests, func(r Request) bool { return !r.Failed }) {
		p.Failed = true
	}
	if p.Kind == LoadConcurrency {
		if !finite(p.Concurrency) || p.Concurrency < 1 {
			return fmt.Errorf("%s: no usable concurrency (%v)", what, p.Concurrency)
		}
	} else if !finite(p.Rate) || p.Rate == 0 {
		// no successful request at a rate the tool did not set: the
		// round's load is unknown, or (max throughput) the offered +Inf
		switch {
		case p.RateSet && p.Rate == 0, math.IsNaN(p.Rate), p.Rate < 0:
			return fmt.Errorf("%s: no usable request rate (%v)", what, p.Rate)
		case p.Rate == 0:
			p.Failed = true
			if !p.MaxThroughput {
				p.NoLoad = true
			}
		default:
			return fmt.Errorf("%s: no usable request rate (%v)", what, p.Rate)
		}
	}
	if !finite(p.Throughput) {
		if !p.Failed {
			return fmt.Errorf("%s: no usable output throughput (%v)", what, p.Throughput)
		}
		p.Throughput = 0
	}
	for i, r := range p.Requests {
		if !finite(r.OutputTokens) {
			return fmt.Errorf("%s: request %d has output tokens %v", what, i, r.OutputTokens)
		}
	}
	return nil
}

// comparePoints is the canonical order of rounds: rate before
// concurrency, then setting, then load (rounds without one last), then
// file and place in it, so the order the files are given in changes
// nothing.
func comparePoints(a, b Point) int {
	if a.Kind != b.Kind {
		if a.Kind == LoadRate {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(a.Setting, b.Setting); c != 0 {
		return c
	}
	if a.NoLoad != b.NoLoad {
		if a.NoLoad {
			return 1
		}
		return -1
	}
	if c := cmp.Compare(a.Load(), b.Load()); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Source, b.Source); c != 0 {
		return c
	}
	return cmp.Compare(a.Index, b.Index)
}
