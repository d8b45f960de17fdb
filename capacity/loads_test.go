package capacity

import (
	"bytes"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

const sweep8 = realDir + "vllm/sweep-v0.25.1/max_num_seqs8/"

func reportText(t *testing.T, slo goodput.SLO, files ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := Report(&out, ReportOptions{Files: files, SLO: slo, Peak: 1000, Hourly: 10, Currency: "EUR"}); err != nil {
		t.Fatalf("%v: %v", files, err)
	}
	return out.String()
}

// TestRepeatsEitherOrder: two `vllm bench sweep` runs at concurrency 2
// (191.2 and 186.5 tok/s, TTFT P99 57.6 and 57.2 ms... both under 500 ms)
// are one round at one load, whichever file comes first: the same report
// in both orders, no knee claimed (no higher load was observed, let alone
// failed), and the round's throughput is the runs' output tokens over
// their summed time: (128 + 128) / (d0 + d1), from the files' own totals,
// not from their throughput fields. The sweep's summary.json, an array of
// the same two runs, gives the same round.
func TestRepeatsEitherOrder(t *testing.T) {
	r0, r1 := sweep8+"run0.json", sweep8+"run1.json"
	a, b := reportText(t, chatSLO, r0, r1), reportText(t, chatSLO, r1, r0)
	if a != b {
		t.Fatalf("the report depends on the order of the files:\n%s\n---\n%s", a, b)
	}
	for _, want := range []string{"knee not reached", "2 runs at one load", "goodput 186 to 191 tok/s, a spread of 2.5%"} {
		if !strings.Contains(a, want) {
			t.Errorf("report lacks %q:\n%s", want, a)
		}
	}
	if strings.Contains(a, "knee: round") {
		t.Errorf("a knee claimed with no higher load observed:\n%s", a)
	}
	want := (rawField(t, r0, "total_output_tokens") + rawField(t, r1, "total_output_tokens")) /
		(rawField(t, r0, "duration") + rawField(t, r1, "duration"))
	for _, files := range [][]string{{r0, r1}, {r1, r0}, {sweep8 + "summary.json"}} {
		res := judge(t, files...)
		if len(res.Points) != 1 {
			t.Fatalf("%v: %d rounds, want the two runs as one", files, len(res.Points))
		}
		p := res.Points[0]
		if !within(p.Throughput, want, 1e-9) || !within(p.Goodput, want, 1e-9) || !p.Met || len(p.Repeats) != 2 || res.KneeReached {
			t.Errorf("%v: throughput %v goodput %v met %v repeats %d reached %v; want %v, met, 2, not reached",
				files, p.Throughput, p.Goodput, p.Met, len(p.Repeats), res.KneeReached, want)
		}
	}
}

// TestRepeatsPooled: with per-request data the repeats' requests are
// pooled and judged as one round. Round 6 of the worked example given
// twice holds 2 × 170 requests with 2 × 700 tokens over 500 ms: goodput
// is still 3,330 tok/s and its attainment still 338/340.
func TestRepeatsPooled(t *testing.T) {
	r6 := "testdata/constructed/vllm/round06.json"
	dir := t.TempDir()
	b, _ := os.ReadFile(r6)
	again := filepath.Join(dir, "round06-again.json")
	_ = os.WriteFile(again, b, 0o644)
	res := judge(t, r6, again)
	p := res.Points[0]
	if len(res.Points) != 1 || !p.Pooled || len(p.Requests) != 340 || !within(p.Goodput, 3330, 1e-9) ||
		!within(p.Attainment[0], 338.0/340, 1e-12) || p.Duration != 20 {
		t.Errorf("pooled: %d rounds, pooled %v, %d requests, goodput %v, attainment %v, duration %v",
			len(res.Points), p.Pooled, len(p.Requests), p.Goodput, p.Attainment, p.Duration)
	}
}

// TestKneeNeedsAHigherFailedLoad: the worked example's rounds 1 to 6 all
// meet the SLO, so round 6's 3,330 tok/s is a lower bound; add a round at
// a higher load that failed (the real `vllm bench serve` run at rate inf
// in which all 8 requests failed) and the knee is reached at round 6. The
// failed round is judged, missed, and never fails the command.
func TestKneeNeedsAHigherFailedLoad(t *testing.T) {
	failed := realDir + "vllm/vllm-bench-serve-v0.25.1-all-failed.json"
	if rawField(t, failed, "completed") != 0 || rawField(t, failed, "failed") != 8 {
		t.Fatal("the fixture is no longer a run in which every request failed")
	}
	six := glob(t, "testdata/constructed/vllm/round0[1-6].json")
	res := judge(t, six...)
	if res.KneeReached || res.KneePoint().Round != 6 {
		t.Fatalf("rounds 1-6: knee round %d, reached %v; want 6, not reached", res.KneePoint().Round, res.KneeReached)
	}
	res = judge(t, append(six, failed)...)
	last := res.Points[len(res.Points)-1]
	if !res.KneeReached || res.KneePoint().Round != 6 || len(res.Points) != 7 || last.Met || !last.Failed ||
		last.Goodput != 0 || !last.MaxThroughput {
		t.Errorf("with the failed round: knee %d reached %v, %d rounds, last met %v failed %v goodput %v",
			res.KneePoint().Round, res.KneeReached, len(res.Points), last.Met, last.Failed, last.Goodput)
	}
	// The file's percentiles are 0.0 (no request to measure): they would
	// pass any threshold, and must not.
	if v, _ := last.Percentile(goodput.KindTTFT, 99); v != 0 {
		t.Fatalf("fixture's P99 TTFT %v", v)
	}
	txt := reportText(t, chatSLO, failed)
	if !strings.Contains(txt, "missed (no successful request)") || !strings.Contains(txt, "no knee") {
		t.Errorf("the failed run alone:\n%s", txt)
	}
}

// TestFailedRoundWithoutLoad: a run with no successful request and no
// rate at all (no request_rate, no achieved rate) is listed without a
// load and said so.
func TestFailedRoundWithoutLoad(t *testing.T) {
	b, _ := os.ReadFile(realDir + "vllm/vllm-bench-serve-v0.25.1-all-failed.json")
	b = bytes.Replace(b, []byte(`"request_rate": "inf", `), nil, 1)
	b = bytes.Replace(b, []byte(`"request_throughput": 0.0, `), nil, 1)
	f := filepath.Join(t.TempDir(), "noload.json")
	_ = os.WriteFile(f, b, 0o644)
	six := glob(t, "testdata/constructed/vllm/round0[1-6].json")
	res := judge(t, append(six, f)...)
	last := res.Points[len(res.Points)-1]
	if !last.NoLoad || last.Met || res.KneeReached {
		t.Errorf("no-load round: noload %v met %v; knee reached %v (a round without a load is no higher load)", last.NoLoad, last.Met, res.KneeReached)
	}
	txt := reportText(t, chatSLO, append(six, f)...)
	if !strings.Contains(txt, "records no load") {
		t.Errorf("not said:\n%s", txt)
	}
}

// TestTPOTOnAIPerfSummary: AIPerf's inter_token_latency is per request
// and is TPOT as vLLM defines it; a TPOT objective is judged on its P99.
// The threshold sits between the runs' P99s, read from the files by a
// second path.
func TestTPOTOnAIPerfSummary(t *testing.T) {
	var files []string
	var p99s []float64
	for _, run := range []string{"0.10.0-rate0.8", "0.10.0-rate1.0", "0.10.0-rate1.2"} {
		f := realDir + "aiperf/" + run + "/profile_export_aiperf.json"
		files = append(files, f)
		p99s = append(p99s, rawField(t, f, "inter_token_latency", "p99")/1000)
	}
	sorted := slices.Clone(p99s)
	slices.Sort(sorted)
	threshold := (sorted[0] + sorted[1]) / 2
	slo := goodput.SLO{Name: "tpot", Objectives: []goodput.Objective{{Kind: goodput.KindTPOT, Threshold: threshold, Target: 0.99}}}
	sw, err := Read(files...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Judge(sw, slo)
	if err != nil {
		t.Fatal(err)
	}
	met := 0
	for i, p := range res.Points {
		if want := p99s[i] <= threshold; p.Met != want {
			t.Errorf("round %d: met %v, its P99 inter_token_latency %v against %v", i+1, p.Met, p99s[i], threshold)
		}
		if p.Met {
			met++
		}
	}
	if met != 1 {
		t.Errorf("%d rounds met; the threshold lets exactly one through", met)
	}
}

// TestNewShapes: each file shape is read as the tool wrote it, and its
// figures are the file's own (read here by a second path).
func TestNewShapes(t *testing.T) {
	// a vllm bench sweep summary: a JSON array of two runs
	sum := realDir + "vllm/sweep-v0.25.1/max_num_seqs4/summary.json"
	sw, err := Read(sum)
	if err != nil {
		t.Fatal(err)
	}
	if len(sw.Points) != 2 || sw.Tool != ToolVLLMBench || sw.Points[0].Setting != "max_num_seqs=4" ||
		sw.Points[0].Throughput != rawField(t, sum, 0, "output_throughput") || sw.Points[1].Throughput != rawField(t, sum, 1, "output_throughput") {
		t.Errorf("sweep summary: %+v", sw.Points)
	}
	// GuideLLM 0.8.0.dev18 (llm-d's fixture): two constant rounds
	g08 := realDir + "guidellm/v0.8.0.dev18-llm-d-constant2-4.json"
	res := judge(t, g08)
	if len(res.Points) != 2 || res.Points[0].Rate != 2 || res.Points[1].Rate != 4 || !strings.HasPrefix(res.Points[0].Version, "GuideLLM 0.8.0.dev18") {
		t.Fatalf("GuideLLM 0.8: %d rounds", len(res.Points))
	}
	for i, p := range res.Points {
		if thr := rawField(t, g08, "benchmarks", i, "metrics", "output_tokens_per_second", "successful", "mean"); p.Throughput != thr {
			t.Errorf("GuideLLM 0.8 round %d: throughput %v, file %v", i+1, p.Throughput, thr)
		}
		if v, _ := p.Percentile(goodput.KindTTFT, 99); !within(v, rawField(t, g08, "benchmarks", i, "metrics", "time_to_first_token_ms",
			"successful", "percentiles", "p99")/1000, 1e-12) {
			t.Errorf("GuideLLM 0.8 round %d: TTFT P99 %v", i+1, v)
		}
	}
	// a GenAI-Perf export: the load at the top of input_config
	gp := realDir + "genai-perf/perf_analyzer-issue298-concurrency100-streaming.json"
	sw, err = Read(gp)
	if err != nil {
		t.Fatal(err)
	}
	p := sw.Points[0]
	if sw.Tool != ToolGenAIPerf || p.Kind != LoadConcurrency || p.Concurrency != 100 || p.Throughput != rawField(t, gp, "output_token_throughput", "avg") ||
		p.Rate != rawField(t, gp, "request_throughput", "avg") {
		t.Errorf("GenAI-Perf: %s %s %v %v", sw.Tool, p.Kind, p.Concurrency, p.Throughput)
	}
	if v, _ := p.Percentile(goodput.KindTPOT, 99); !within(v, rawField(t, gp, "inter_token_latency", "p99")/1000, 1e-12) {
		t.Errorf("GenAI-Perf TPOT P99 %v", v)
	}
	// SGLang bench_serving JSON lines: two data sets, two sweeps
	sg := realDir + "sglang/h200-llama-3.3-70b-online.jsonl"
	sw, err = Read(sg)
	if err != nil {
		t.Fatal(err)
	}
	parts := sw.Split()
	if sw.Tool != ToolSGLang || len(parts) != 2 || len(parts[0].Points) != 5 || len(parts[1].Points) != 2 ||
		parts[1].Points[0].Setting != "data set sharegpt" {
		t.Fatalf("SGLang: %d sweeps", len(parts))
	}
	lines := bytes.Split(bytes.TrimSpace(must(os.ReadFile(sg))), []byte("\n"))
	for i, p := range parts[0].Points {
		f := filepath.Join(t.TempDir(), "line.json")
		_ = os.WriteFile(f, lines[i], 0o644)
		if p.Throughput != rawField(t, f, "output_throughput") || p.Rate != rawField(t, f, "request_rate") || p.Counted != int(rawField(t, f, "completed")) {
			t.Errorf("SGLang line %d: %v tok/s at %v req/s", i+1, p.Throughput, p.Rate)
		}
		if v, _ := p.Percentile(goodput.KindITL, 50); !within(v, rawField(t, f, "median_itl_ms")/1000, 1e-12) {
			t.Errorf("SGLang line %d: ITL P50 %v", i+1, v)
		}
	}
	// Python's bare Infinity (an uncapped run) is max throughput
	sw, err = Read(realDir + "sglang/h200-llama-3.3-70b-offline.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !sw.Points[0].MaxThroughput || !within(sw.Points[0].Rate, 3000/341.72106836596504, 1e-9) {
		t.Errorf("SGLang inf run: max throughput %v at %v req/s", sw.Points[0].MaxThroughput, sw.Points[0].Rate)
	}
	// a file of no known shape names what is read
	for _, f := range []string{"../go.mod", "testdata/PROVENANCE.md"} {
		if _, err := Read(f); err == nil || !strings.Contains(err.Error(), "SGLang bench_serving output") ||
			!strings.Contains(err.Error(), "vllm bench sweep") {
			t.Errorf("%s: %v", f, err)
		}
	}
	arr := filepath.Join(t.TempDir(), "arr.json")
	_ = os.WriteFile(arr, []byte(`[{"a": 1}]`), 0o644)
	if _, err := Read(arr); err == nil || !strings.Contains(err.Error(), "GuideLLM benchmarks report") {
		t.Errorf("an array of something else: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// sweepsInTestdata are the sweeps of the testdata, as file sets a user
// would give together; every file and AIPerf run directory under
// testdata is in one (TestShuffleEverySweep checks).
func sweepsInTestdata(t *testing.T) [][]string {
	vl := func(n string) string { return realDir + "vllm/" + n }
	aip := func(n string) string { return realDir + "aiperf/" + n }
	return [][]string{
		glob(t, "testdata/constructed/vllm/round*.json"),
		append(glob(t, "testdata/constructed/vllm/round0[1-6].json"), vl("vllm-bench-serve-v0.25.1-all-failed.json")),
		glob(t, "testdata/constructed/aiperf/round*"),
		{"testdata/constructed/guidellm/benchmarks.json"},
		{"testdata/constructed/guidellm/benchmarks.yaml"},
		{"testdata/constructed/guidellm/regressed.json"},
		{aip("0.10.0-rate0.8"), aip("0.10.0-rate1.0"), aip("0.10.0-rate1.2"), aip("0.10.0-concurrency2"), aip("0.10.0-concurrency8")},
		{aip("0.8.0-concurrency1")},
		{aip("0.13.0-testengine-concurrency2"), aip("0.13.0-testengine-concurrency8"), aip("0.13.0-testengine-poisson-half"), aip("0.13.0-testengine-poisson-same")},
		glob(t, realDir+"vllm/sweep-v0.25.1/*/run*.json"),
		append(glob(t, realDir+"vllm/sweep-v0.25.1/*/summary.json"), vl("vllm-bench-serve-v0.25.1-sweep-max_num_seqs4-run0.json")),
		{vl("benchmark_serving-openai-chat-infqps-20250916-091253.json"), vl("vllm-bench-serve-v0.25.1.json")},
		glob(t, realDir+"guidellm/*"),
		glob(t, realDir+"sglang/*.jsonl"),
		glob(t, realDir+"genai-perf/*.json"),
	}
}

// TestShuffleEverySweep: the report of every sweep in testdata is the
// same whatever order its files are given in.
func TestShuffleEverySweep(t *testing.T) {
	sweeps := sweepsInTestdata(t)
	covered := map[string]bool{}
	for _, s := range sweeps {
		for _, f := range s {
			covered[filepath.Clean(f)] = true
		}
	}
	_ = filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || strings.HasPrefix(p, "testdata/gen") || p == "testdata/PROVENANCE.md" {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), "round") || strings.HasPrefix(filepath.Dir(p), "testdata/real/aiperf")) && p != "testdata/real/aiperf" {
			if !covered[p] {
				t.Errorf("%s is in no sweep of the shuffle test", p)
			}
			return fs.SkipDir
		}
		if !d.IsDir() && !covered[p] {
			t.Errorf("%s is in no sweep of the shuffle test", p)
		}
		return nil
	})
	slos := []goodput.SLO{chatSLO, {Name: "p50", Objectives: []goodput.Objective{
		{Kind: goodput.KindTTFT, Threshold: 0.1, Target: 0.5}, {Kind: goodput.KindITL, Threshold: 0.015, Target: 0.5}}}}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, files := range sweeps {
		var want string
		for _, slo := range slos {
			var out bytes.Buffer
			if err := Report(&out, ReportOptions{Files: files, SLO: slo, Peak: 1000, Hourly: 10, Currency: "EUR"}); err == nil {
				want = out.String()
				for range 5 {
					shuffled := slices.Clone(files)
					rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
					var got bytes.Buffer
					if err := Report(&got, ReportOptions{Files: shuffled, SLO: slo, Peak: 1000, Hourly: 10, Currency: "EUR"}); err != nil {
						t.Fatalf("%v: %v", shuffled, err)
					}
					if got.String() != want {
						t.Errorf("%v under %s: the report changed with the order of the files:\n%s\n---\n%s", files, slo.Name, want, got.String())
					}
				}
			}
		}
		if want == "" {
			t.Errorf("%v: judged under no SLO", files)
		}
	}
}
