package capacity

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

const realDir = "testdata/real/"

// rawField reads a number out of a result file by its JSON path, with no
// code shared with the readers: the second path to the tool's own figure.
func rawField(t *testing.T, file string, keys ...any) float64 {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("%s %v: %v is not a number", file, keys, v)
	}
	return f
}

func within(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)
}

// realCase is one real result file (or AIPerf run) and what the tool
// itself published for it.
type realCase struct {
	path    string
	version string // as the reader must name it
	kind    LoadKind
	load    float64 // the load the tool was given (rate or concurrency)
	rateSet bool
	maxThr  bool
	// published: the tool's own throughput field, and (where the file has
	// them) total output tokens and duration, a third path to it
	published func(t *testing.T) float64
	totals    func(t *testing.T) float64
	counted   int
}

func realCases() []realCase {
	g03 := realDir + "guidellm/v0.3-sync-stripped.json"
	g05 := realDir + "guidellm/v0.5.0.dev0-concurrent4-trimmed.json"
	g05w := realDir + "guidellm/v0.5.0.dev0-synchronous-warmup-trimmed.json"
	aip := func(run string) string { return realDir + "aiperf/" + run + "/profile_export_aiperf.json" }
	aiperfThr := func(f string) func(*testing.T) float64 {
		return func(t *testing.T) float64 { return rawField(t, f, "output_token_throughput", "avg") }
	}
	aiperfTot := func(f string) func(*testing.T) float64 {
		return func(t *testing.T) float64 {
			return rawField(t, f, "total_output_tokens", "avg") / rawField(t, f, "benchmark_duration", "avg")
		}
	}
	vl := func(name string) string { return realDir + "vllm/" + name }
	vllmThr := func(f string) func(*testing.T) float64 {
		return func(t *testing.T) float64 { return rawField(t, f, "output_throughput") }
	}
	vllmTot := func(f string) func(*testing.T) float64 {
		return func(t *testing.T) float64 { return rawField(t, f, "total_output_tokens") / rawField(t, f, "duration") }
	}
	guideThr := func(f string) func(*testing.T) float64 {
		return func(t *testing.T) float64 {
			return rawField(t, f, "benchmarks", 0, "metrics", "output_tokens_per_second", "successful", "mean")
		}
	}
	return []realCase{
		{path: g03, version: "GuideLLM v0.3 report", kind: LoadRate, load: 1.5481806532737452, published: guideThr(g03), counted: 46},
		{path: realDir + "guidellm/v0.3-sync-stripped.yaml", version: "GuideLLM v0.3 report", kind: LoadRate, load: 1.5481806532737452,
			published: guideThr(g03), counted: 46},
		{path: g05, version: "GuideLLM 0.5.0.dev0", kind: LoadConcurrency, load: 4, published: guideThr(g05),
			totals: func(t *testing.T) float64 {
				return rawField(t, g05, "benchmarks", 0, "metrics", "output_token_count", "successful", "total_sum") /
					rawField(t, g05, "benchmarks", 0, "duration")
			}, counted: 4},
		{path: g05w, version: "GuideLLM 0.5.0.dev0", kind: LoadRate, load: 0.036111111111111115, published: guideThr(g05w), counted: 26},
		{path: aip("0.8.0-concurrency1"), version: "AIPerf 0.8.0", kind: LoadConcurrency, load: 1,
			published: aiperfThr(aip("0.8.0-concurrency1")), totals: aiperfTot(aip("0.8.0-concurrency1")), counted: 10},
		{path: aip("0.10.0-rate0.8"), version: "AIPerf 0.10.0", kind: LoadRate, load: 0.8, rateSet: true,
			published: aiperfThr(aip("0.10.0-rate0.8")), totals: aiperfTot(aip("0.10.0-rate0.8")), counted: 96},
		{path: aip("0.10.0-rate1.0"), version: "AIPerf 0.10.0", kind: LoadRate, load: 1.0, rateSet: true,
			published: aiperfThr(aip("0.10.0-rate1.0")), totals: aiperfTot(aip("0.10.0-rate1.0")), counted: 96},
		{path: aip("0.10.0-rate1.2"), version: "AIPerf 0.10.0", kind: LoadRate, load: 1.2, rateSet: true,
			published: aiperfThr(aip("0.10.0-rate1.2")), totals: aiperfTot(aip("0.10.0-rate1.2")), counted: 96},
		{path: aip("0.10.0-concurrency2"), version: "AIPerf 0.10.0", kind: LoadConcurrency, load: 2,
			published: aiperfThr(aip("0.10.0-concurrency2")), totals: aiperfTot(aip("0.10.0-concurrency2")), counted: 96},
		{path: aip("0.10.0-concurrency8"), version: "AIPerf 0.10.0", kind: LoadConcurrency, load: 8,
			published: aiperfThr(aip("0.10.0-concurrency8")), totals: aiperfTot(aip("0.10.0-concurrency8")), counted: 96},
		{path: vl("benchmark_serving-openai-chat-infqps-20250916-091253.json"), version: "benchmark_serving.py result",
			kind: LoadRate, load: 0.10648231258471584, maxThr: true,
			published: vllmThr(vl("benchmark_serving-openai-chat-infqps-20250916-091253.json")),
			totals:    vllmTot(vl("benchmark_serving-openai-chat-infqps-20250916-091253.json")), counted: 1},
		{path: vl("vllm-bench-serve-v0.25.1.json"), version: "vllm bench serve result", kind: LoadConcurrency, load: 2,
			published: vllmThr(vl("vllm-bench-serve-v0.25.1.json")), totals: vllmTot(vl("vllm-bench-serve-v0.25.1.json")), counted: 8},
		{path: vl("vllm-bench-serve-v0.25.1-sweep-max_num_seqs4-run0.json"), version: "vllm bench serve result", kind: LoadConcurrency, load: 2,
			published: vllmThr(vl("vllm-bench-serve-v0.25.1-sweep-max_num_seqs4-run0.json")),
			totals:    vllmTot(vl("vllm-bench-serve-v0.25.1-sweep-max_num_seqs4-run0.json")), counted: 8},
	}
}

// TestRealFilesJudged: every real result file parses and is judged; each
// round's throughput is the tool's own published figure (read here by a
// second path, and where the file has its totals, a third: total output
// tokens over the duration, within 1 %); goodput never exceeds it; the
// load is the one the tool was given, of the right kind, and the version
// is named.
func TestRealFilesJudged(t *testing.T) {
	slo := goodput.SLO{Name: "chat", Objectives: []goodput.Objective{{Kind: goodput.KindTTFT, Threshold: 0.5, Target: 0.99}}}
	for _, c := range realCases() {
		t.Run(filepath.Base(filepath.Dir(c.path))+"/"+filepath.Base(c.path), func(t *testing.T) {
			sw, err := Read(c.path)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Judge(sw, slo)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Points) != 1 {
				t.Fatalf("%d rounds, want 1", len(res.Points))
			}
			p := res.Points[0]
			if !strings.HasPrefix(p.Version, c.version) {
				t.Errorf("version %q, want %q…", p.Version, c.version)
			}
			if p.Kind != c.kind || p.Load() != c.load && !(c.maxThr && math.IsInf(p.Load(), 1)) {
				t.Errorf("load %s %v, want %s %v", p.Kind, p.Load(), c.kind, c.load)
			}
			if p.RateSet != c.rateSet || p.MaxThroughput != c.maxThr {
				t.Errorf("rate set %v, max throughput %v; want %v, %v", p.RateSet, p.MaxThroughput, c.rateSet, c.maxThr)
			}
			if c.maxThr && p.Rate != c.load {
				t.Errorf("max-throughput round at %v req/s, want the achieved %v", p.Rate, c.load)
			}
			if pub := c.published(t); !within(p.Throughput, pub, 0.01) {
				t.Errorf("throughput %v, the tool published %v", p.Throughput, pub)
			}
			if c.totals != nil {
				if tot := c.totals(t); !within(p.Throughput, tot, 0.01) {
					t.Errorf("throughput %v, total output tokens / duration %v", p.Throughput, tot)
				}
			}
			if !p.CountKnown || p.Counted != c.counted {
				t.Errorf("counted %d (known %v), want %d", p.Counted, p.CountKnown, c.counted)
			}
			if p.Goodput > p.Throughput || p.Goodput < 0 || math.IsNaN(p.Goodput) {
				t.Errorf("goodput %v against throughput %v", p.Goodput, p.Throughput)
			}
			var out bytes.Buffer
			s, err := res.Size(1000, 10)
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Write(&out, s, "EUR"); err != nil {
				t.Fatal(err)
			}
			// one round: its goodput is a lower bound (or none), never a knee
			if strings.Contains(out.String(), "cost at the knee") ||
				!strings.Contains(out.String(), "knee not reached") && !strings.Contains(out.String(), "no knee") {
				t.Errorf("a one-round sweep printed as a reached knee:\n%s", out.String())
			}
		})
	}
}

// TestGuideLLMRequestTotals: v0.4 and later write metrics.request_totals
// as integer counts (StatusBreakdown[int, int, int, int]), v0.3 writes
// them at the benchmark's top; both are read as the tool's count, and the
// per-request lists are judged as a sample of it where they are shorter.
func TestGuideLLMRequestTotals(t *testing.T) {
	g05 := realDir + "guidellm/v0.5.0.dev0-concurrent4-trimmed.json"
	if got := rawField(t, g05, "benchmarks", 0, "metrics", "request_totals", "successful"); got != 4 {
		t.Fatalf("the v0.5 fixture no longer has metrics.request_totals.successful = 4 (%v)", got)
	}
	res := judge(t, g05)
	p := res.Points[0]
	if !p.Exact || p.Sampled || p.Listed != 4 || p.Counted != 4 {
		t.Fatalf("v0.5: exact %v sampled %v listed %d counted %d; want exact over all 4", p.Exact, p.Sampled, p.Listed, p.Counted)
	}
	// every request's TTFT is 171–173 ms: all good, goodput = throughput
	if p.Goodput != p.Throughput {
		t.Errorf("v0.5 goodput %v, throughput %v", p.Goodput, p.Throughput)
	}
	// a malformed count is an error naming the field and the version
	b, _ := os.ReadFile(g05)
	bad := filepath.Join(t.TempDir(), "bad.json")
	_ = os.WriteFile(bad, bytes.Replace(b, []byte(`"request_totals": {"successful": 4`), []byte(`"request_totals": {"successful": "four"`), 1), 0o644)
	if _, err := Read(bad); err == nil || !strings.Contains(err.Error(), "metrics.request_totals.successful") ||
		!strings.Contains(err.Error(), "GuideLLM 0.5.0.dev0") {
		t.Errorf("malformed request_totals: %v", err)
	}

	g03 := realDir + "guidellm/v0.3-sync-stripped.json"
	if got := rawField(t, g03, "benchmarks", 0, "request_totals", "successful"); got != 46 {
		t.Fatalf("the v0.3 fixture no longer has request_totals.successful = 46 (%v)", got)
	}
	p = judge(t, g03).Points[0]
	if !p.Sampled || p.Listed != 1 || p.Counted != 46 {
		t.Fatalf("v0.3: sampled %v listed %d counted %d; want a sample of 1 of 46", p.Sampled, p.Listed, p.Counted)
	}
	// the one listed request (TTFT 21 ms) is good: the estimate is the
	// whole throughput, not its 128 tokens over 30 s (4.3 tok/s)
	if p.Goodput != p.Throughput || p.Throughput < 198 {
		t.Errorf("v0.3 goodput %v, throughput %v", p.Goodput, p.Throughput)
	}
	if !strings.Contains(judge(t, g03).Describe(), "estimate from that sample") {
		t.Error("a sampled round is not said to be an estimate")
	}
}

// TestAIPerfLoad: AIPerf 0.10 records the load under input_config.phases[]
// (the warmup phase excluded): a --request-rate 1.0 run is judged at 1.0
// req/s, the rate it was given, not the 1.0097 it achieved; a
// --concurrency run is a concurrency round. 0.8 records it under
// input_config.loadgen.
func TestAIPerfLoad(t *testing.T) {
	r := realDir + "aiperf/0.10.0-rate1.0/profile_export_aiperf.json"
	if a := rawField(t, r, "request_throughput", "avg"); within(a, 1.0, 0.005) {
		t.Fatalf("fixture's achieved rate %v is too close to 1.0 for the test to tell them apart", a)
	}
	if ph := rawField(t, r, "input_config", "phases", 1, "rate"); ph != 1.0 {
		t.Fatalf("fixture's profiling phase rate %v", ph)
	}
	p := judge(t, r).Points[0]
	if p.Rate != 1.0 || !p.RateSet || p.Kind != LoadRate {
		t.Errorf("rate %v (set %v, %s), want the set 1.0", p.Rate, p.RateSet, p.Kind)
	}
	p = judge(t, realDir+"aiperf/0.10.0-concurrency8").Points[0]
	if p.Kind != LoadConcurrency || p.Concurrency != 8 {
		t.Errorf("concurrency run read as %s %v", p.Kind, p.Load())
	}
	// 0.8.0 with its records: 20 requests, 10 timed out; the 10 good ones
	// are exactly the tool's request_count, so the data is not a sample
	sw, err := Read(realDir + "aiperf/0.8.0-concurrency1")
	if err != nil {
		t.Fatal(err)
	}
	errSLO := goodput.SLO{Name: "avail", Objectives: []goodput.Objective{{Kind: goodput.KindError, Target: 0.9}}}
	res, err := Judge(sw, errSLO)
	if err != nil {
		t.Fatal(err)
	}
	j := res.Points[0]
	if len(j.Requests) != 20 || j.Listed != 10 || j.Sampled || j.Attainment[0] != 0.5 || j.Met {
		t.Errorf("0.8.0 records: %d requests, %d listed, sampled %v, attainment %v, met %v; want 20, 10, false, 0.5, false",
			len(j.Requests), j.Listed, j.Sampled, j.Attainment, j.Met)
	}
	// a TTFT P99 <= 300 ms objective: requests 0 (1,702 ms, 6 tokens) is
	// the only success over it; the 10 successes hold 110 tokens, so the
	// good share is 104/110 of the tool's 0.5752 tok/s
	ttft := goodput.SLO{Name: "ttft", Objectives: []goodput.Objective{{Kind: goodput.KindTTFT, Threshold: 0.3, Target: 0.99}}}
	if res, err = Judge(sw, ttft); err != nil {
		t.Fatal(err)
	}
	want := 0.57520480976081 * 104 / 110
	if g := res.Points[0].Goodput; math.Abs(g-want) > 1e-12 {
		t.Errorf("goodput %v, want %v", g, want)
	}
	// a measured phase of the wrong shape names the field and the
	// version; the excluded warmup phase is not read, so its shape does
	// not matter
	b, _ := os.ReadFile(r)
	dir := t.TempDir()
	bad := filepath.Join(dir, "profile_export_aiperf.json")
	_ = os.WriteFile(bad, bytes.Replace(b, []byte(`"rate": 1.0`), []byte(`"rate": "fast"`), 1), 0o644)
	if _, err := Read(bad); err != nil {
		t.Errorf("a malformed warmup phase failed the file: %v", err)
	}
	_ = os.WriteFile(bad, bytes.ReplaceAll(b, []byte(`"rate": 1.0`), []byte(`"rate": "fast"`)), 0o644)
	if _, err := Read(bad); err == nil || !strings.Contains(err.Error(), "input_config.phases[1].rate") ||
		!strings.Contains(err.Error(), "AIPerf 0.10.0") {
		t.Errorf("malformed phase rate: %v", err)
	}
}

// TestMixedLoadKinds: rate runs and concurrency runs given together are
// two sweeps, judged apart, never one; Judge refuses the mix. Under TTFT
// P99 <= 220 ms: the rate runs' P99s are 215.5 (0.8), 247.2 (1.0) and
// 215.8 ms (1.2): 0.8 and 1.2 pass, so goodput still rises at the last
// round and the rate knee is not reached; the concurrency runs' are 195.0
// (2) and 232.3 ms (8): the concurrency knee is 2, at its 325.8 tok/s.
func TestMixedLoadKinds(t *testing.T) {
	var files []string
	for _, run := range []string{"0.10.0-rate0.8", "0.10.0-concurrency8", "0.10.0-rate1.2", "0.10.0-concurrency2", "0.10.0-rate1.0"} {
		files = append(files, realDir+"aiperf/"+run)
	}
	sw, err := Read(files...)
	if err != nil {
		t.Fatal(err)
	}
	slo := goodput.SLO{Name: "chat", Objectives: []goodput.Objective{{Kind: goodput.KindTTFT, Threshold: 0.22, Target: 0.99}}}
	if _, err := Judge(sw, slo); err == nil || !strings.Contains(err.Error(), "mix a rate sweep (3 rounds) and a concurrency sweep (2 rounds)") {
		t.Fatalf("mixed sweep judged as one: %v", err)
	}
	results, err := JudgeEach(sw, slo)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[0].Kind != LoadRate || results[1].Kind != LoadConcurrency {
		t.Fatalf("%d judgements", len(results))
	}
	rate, conc := results[0], results[1]
	var loads []float64
	for _, p := range rate.Points {
		loads = append(loads, p.Rate)
	}
	if len(loads) != 3 || loads[0] != 0.8 || loads[1] != 1.0 || loads[2] != 1.2 || rate.Points[1].Met || !rate.Points[2].Met {
		t.Fatalf("rate sweep %v", loads)
	}
	if rate.KneeReached || rate.Knee != 2 {
		t.Errorf("rate knee at %d, reached %v", rate.Knee, rate.KneeReached)
	}
	k := conc.KneePoint()
	if !conc.KneeReached || k.Concurrency != 2 || k.Round != 1 || !within(k.Goodput, 325.8306229225207, 1e-12) {
		t.Errorf("concurrency knee %v at round %d (reached %v), goodput %v", k.Concurrency, k.Round, conc.KneeReached, k.Goodput)
	}
	var out bytes.Buffer
	s, _ := rate.Size(0, 10)
	_ = rate.Write(&out, s, "EUR")
	txt := out.String()
	if strings.Contains(txt, "cost at the knee") || !strings.Contains(txt, "cost at the best passing round (round 3, 1.2 req/s; not a knee") {
		t.Errorf("rate sweep, knee not reached:\n%s", txt)
	}
	out.Reset()
	s, _ = conc.Size(0, 10)
	_ = conc.Write(&out, s, "EUR")
	// 10 EUR/h over 325.83 tok/s: 10/3600/325.83e-6 = 8.53 EUR per million
	for _, want := range []string{"knee: round 1 at concurrency 2, 326 tok/s of goodput", "cost at the knee: 8.53 EUR", "concurrency sweep"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("concurrency output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestMaxThroughputRound: a --request-rate inf run without a concurrency
// cap has no offered rate: it is named max throughput, at its achieved
// rate, printed rounded.
func TestMaxThroughputRound(t *testing.T) {
	res := judge(t, realDir+"vllm/benchmark_serving-openai-chat-infqps-20250916-091253.json")
	var out bytes.Buffer
	_ = res.Write(&out, Sizing{}, "")
	txt := out.String()
	for _, want := range []string{"max (0.106 achieved)", "max throughput (0.106 req/s achieved)"} {
		if !strings.Contains(txt, want) {
			t.Errorf("output lacks %q:\n%s", want, txt)
		}
	}
	if strings.Contains(txt, "0.1064") {
		t.Errorf("rate printed unrounded:\n%s", txt)
	}
}

// TestOnePopulation: goodput and throughput are over the same requests.
// A GuideLLM request outside the tool's measurement window is not judged
// (the tool's metrics do not count it); a file listing more successful
// requests than the tool counted is refused.
func TestOnePopulation(t *testing.T) {
	g05 := realDir + "guidellm/v0.5.0.dev0-concurrent4-trimmed.json"
	b, err := os.ReadFile(g05)
	if err != nil {
		t.Fatal(err)
	}
	// a slow request that ended before the window opened (1772470696.679)
	late := `{"output_tokens": 5000, "time_to_first_token_ms": 9000.0, "inter_token_latency_ms": 24.0, "request_latency": 30.0, ` +
		`"request_start_time": 1772470600.0, "request_end_time": 1772470630.0}, `
	outside := bytes.Replace(b, []byte(`"requests": {"successful": [`), []byte(`"requests": {"successful": [`+late), 1)
	dir := t.TempDir()
	f := filepath.Join(dir, "outside.json")
	_ = os.WriteFile(f, outside, 0o644)
	p := judge(t, f).Points[0]
	if p.Listed != 4 || p.Goodput != p.Throughput {
		t.Errorf("a request outside the window was judged: listed %d, goodput %v of %v", p.Listed, p.Goodput, p.Throughput)
	}
	// the same request inside the window is a fifth success the tool did
	// not count: refused with the reason
	inside := bytes.Replace(outside, []byte(`"request_start_time": 1772470600.0, "request_end_time": 1772470630.0`),
		[]byte(`"request_start_time": 1772470700.0, "request_end_time": 1772470720.0`), 1)
	f = filepath.Join(dir, "inside.json")
	_ = os.WriteFile(f, inside, 0o644)
	sw, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Judge(sw, chatSLO); err == nil || !strings.Contains(err.Error(), "lists 5 successful requests but the tool counted 4") {
		t.Errorf("five listed, four counted: %v", err)
	}
}

// TestKneeTieBreak: two rounds of equal goodput: the knee is the lower
// load, as documented, whatever order the rounds are given in.
func TestKneeTieBreak(t *testing.T) {
	pt := func(rate, thr, p99 float64) Point {
		p := Point{Kind: LoadRate, Rate: rate, RateSet: true, Throughput: thr}
		p.setPct(goodput.KindTTFT, 99, p99)
		return p
	}
	sw := &Sweep{Tool: ToolVLLMBench, Points: []Point{pt(4, 1000, 0.3), pt(2, 1000, 0.2), pt(6, 1200, 0.9)}}
	res, err := Judge(sw, chatSLO)
	if err != nil {
		t.Fatal(err)
	}
	if k := res.KneePoint(); k.Rate != 2 || !res.KneeReached {
		t.Fatalf("knee at %v req/s (reached %v), want 2: equal goodput goes to the lower rate", k.Rate, res.KneeReached)
	}
	// the same for a concurrency sweep
	for i := range sw.Points {
		sw.Points[i].Kind, sw.Points[i].Concurrency = LoadConcurrency, sw.Points[i].Rate*8
	}
	if res, err = Judge(sw, chatSLO); err != nil || res.KneePoint().Concurrency != 16 {
		t.Fatalf("concurrency knee %v (%v), want 16", res.KneePoint().Concurrency, err)
	}
}

// TestFieldErrors: a field the judgement uses that is missing or of the
// wrong shape is an error naming the field and the version; fields it does
// not use may be anything.
func TestFieldErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, body, want string }{
		{"guidellm no throughput", `{"metadata":{"guidellm_version":"0.6.1"},"benchmarks":[{"config":{"strategy":{"type_":"constant","rate":2}},"metrics":{}}]}`,
			"GuideLLM 0.6.1, benchmark 1: metrics.output_tokens_per_second.successful.mean: missing"},
		{"guidellm constant without rate", `{"benchmarks":[{"config":{"strategy":{"type_":"constant"}},"metrics":{"output_tokens_per_second":{"successful":{"mean":5}}}}]}`,
			"GuideLLM v0.4+ report (benchmarks[].config), benchmark 1: config.strategy.rate: missing"},
		{"guidellm synchronous without achieved rate", `{"benchmarks":[{"args":{"strategy":{"type_":"synchronous"}},"metrics":{"output_tokens_per_second":{"successful":{"mean":5}}}}]}`,
			"GuideLLM v0.3 report (benchmarks[].args), benchmark 1: metrics.requests_per_second.successful.mean: missing, and args.strategy sets no rate"},
		{"guidellm ttft summary malformed", `{"benchmarks":[{"config":{"strategy":{"type_":"poisson","rate":2}},"metrics":{"output_tokens_per_second":{"successful":{"mean":5}},"time_to_first_token_ms":{"successful":[1,2]}}}]}`,
			"metrics.time_to_first_token_ms.successful: not a distribution summary"},
		{"aiperf phases not a list", `{"aiperf_version":"0.11.0","output_token_throughput":{"avg":5},"input_config":{"phases":{"rate":2}}}`,
			"AIPerf 0.11.0 profile export: input_config.phases: not a list of objects"},
		{"aiperf request_count fractional", `{"aiperf_version":"0.10.0","output_token_throughput":{"avg":5},"request_count":{"avg":9.5},"input_config":{"loadgen":{"request_rate":2}}}`,
			"AIPerf 0.10.0 profile export: request_count.avg: not a count of requests"},
		{"vllm rate garbage", `{"endpoint_type":"openai","request_rate":"fast","request_throughput":2,"output_throughput":10}`,
			`vllm bench serve result: request_rate: "fast" is not a rate`},
		{"vllm completed not a count", `{"request_rate":2,"request_throughput":2,"output_throughput":10,"completed":"all"}`,
			"benchmark_serving.py result: completed: not a number"},
	}
	for _, c := range cases {
		f := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".json")
		if err := os.WriteFile(f, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to say %q", c.name, err, c.want)
		}
	}
	// unused fields of any shape are ignored
	f := filepath.Join(dir, "lenient.json")
	_ = os.WriteFile(f, []byte(`{"benchmarks":[{"config":{"strategy":{"type_":"poisson","rate":2},"profile":7},"metrics":{"output_tokens_per_second":{"successful":{"mean":5}},`+
		`"request_concurrency":"x","text":[1]},"scheduler_state":null,"requests":{"total":"n/a"}}],"args":"?"}`), 0o644)
	if sw, err := Read(f); err != nil || sw.Points[0].Rate != 2 {
		t.Errorf("unused fields failed the file: %v", err)
	}
	// a vLLM file whose per-request data lists more successes than it
	// completed is refused when judged
	f = filepath.Join(dir, "more.json")
	_ = os.WriteFile(f, []byte(`{"request_rate":2,"request_throughput":2,"output_throughput":10,"duration":1,"completed":1,"ttfts":[0.1,0.2],"output_lens":[5,5],"errors":["",""]}`), 0o644)
	sw, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Judge(sw, chatSLO); err == nil || !strings.Contains(err.Error(), "lists 2 successful requests but the tool counted 1") {
		t.Errorf("two listed, one completed: %v", err)
	}
}

// TestGuideLLMWindow: a real GuideLLM 0.5 synchronous run with a 10 %
// warmup lists all 30 requests it made, but its metrics count the 26 in
// its measurement window (metrics.request_totals.successful = 26; the
// first four ended before measure_start_time). The reader keeps those 26
// by GuideLLM's own rule, and they are the tool's population: their
// latencies add up to the file's request_latency.successful.total_sum
// (523.43 s) and their TTFTs to its time_to_first_token_ms total_sum.
// Judged over all 30 the file would be refused (30 listed, 26 counted).
func TestGuideLLMWindow(t *testing.T) {
	f := realDir + "guidellm/v0.5.0.dev0-synchronous-warmup-trimmed.json"
	var raw struct {
		Benchmarks []struct {
			Requests struct {
				Successful []json.RawMessage `json:"successful"`
			} `json:"requests"`
		} `json:"benchmarks"`
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &raw); err != nil || len(raw.Benchmarks[0].Requests.Successful) != 30 {
		t.Fatalf("fixture does not list 30 requests: %v", err)
	}
	sw, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	p := sw.Points[0]
	if len(p.Requests) != 26 || p.Counted != 26 {
		t.Fatalf("%d requests kept, %d counted; want the 26 of the window", len(p.Requests), p.Counted)
	}
	var lat, ttft float64
	for _, q := range p.Requests {
		lat += q.E2E
		ttft += q.TTFT
	}
	if wantLat := rawField(t, f, "benchmarks", 0, "metrics", "request_latency", "successful", "total_sum"); math.Abs(lat-wantLat) > 1e-9 {
		t.Errorf("kept requests' latency sum %v, the tool's %v", lat, wantLat)
	}
	if wantTTFT := rawField(t, f, "benchmarks", 0, "metrics", "time_to_first_token_ms", "successful", "total_sum") / 1000; math.Abs(ttft-wantTTFT) > 1e-9 {
		t.Errorf("kept requests' TTFT sum %v s, the tool's %v s", ttft, wantTTFT)
	}
	if p.Kind != LoadRate || p.RateSet || p.Strategy != "synchronous" {
		t.Errorf("synchronous round read as %s, rate set %v, strategy %q", p.Kind, p.RateSet, p.Strategy)
	}
	// under TTFT P99 <= 100 ms, the two in-window requests over it
	// (107.6 and 123.5 ms; every request has 1,024 output tokens) cost
	// 2/26 of the throughput
	slo := goodput.SLO{Name: "ttft100", Objectives: []goodput.Objective{{Kind: goodput.KindTTFT, Threshold: 0.1, Target: 0.9}}}
	res, err := Judge(sw, slo)
	if err != nil {
		t.Fatal(err)
	}
	if g, want := res.Points[0].Goodput, p.Throughput*24/26; math.Abs(g-want) > 1e-9 {
		t.Errorf("goodput %v, want %v", g, want)
	}
	var out bytes.Buffer
	_ = res.Write(&out, Sizing{}, "")
	if !strings.Contains(out.String(), "0.0361 achieved") || !strings.Contains(out.String(), "req/s achieved (synchronous)") {
		t.Errorf("the synchronous round's rate is not marked achieved:\n%s", out.String())
	}
}
