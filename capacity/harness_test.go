package capacity

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClosedLoopLabelled: real AIPerf 0.10 runs of one model, open loop
// (Poisson, 0.8 to 1.2 req/s) and closed loop (2 and 8 clients). The
// closed-loop sweep is labelled, with each round's achieved rate (the
// file's request_throughput, read here by a second path) and the warning;
// the open loop decides the capacity, and the replicas are sized from it
// only.
func TestClosedLoopLabelled(t *testing.T) {
	aip := func(run string) string { return realDir + "aiperf/" + run + "/profile_export_aiperf.json" }
	files := []string{aip("0.10.0-rate0.8"), aip("0.10.0-rate1.0"), aip("0.10.0-rate1.2"), aip("0.10.0-concurrency2"), aip("0.10.0-concurrency8")}
	sw, err := Read(files...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := JudgeEach(sw, chatSLO)
	if err != nil {
		t.Fatal(err)
	}
	closed := res[1]
	if !closed.ClosedLoop() || res[0].ClosedLoop() {
		t.Fatalf("closed loop: rate sweep %v, concurrency sweep %v", res[0].ClosedLoop(), closed.ClosedLoop())
	}
	for i, f := range files[3:] {
		got, how := closed.Points[i].AchievedRate()
		if want := rawField(t, f, "request_throughput", "avg"); got != want || how != "measured" {
			t.Errorf("%s: achieved %v (%s), the file's %v", f, got, how, want)
		}
	}
	var out bytes.Buffer
	if err := Report(&out, ReportOptions{Files: files, SLO: chatSLO, Peak: 1000, Hourly: 10, Currency: "EUR"}); err != nil {
		t.Fatal(err)
	}
	txt := out.String()
	for _, want := range []string{
		"arrival: open loop, poisson",
		"arrival: closed loop",
		"warning: measured in a closed loop of 8 clients (3.37 req/s achieved (measured))",
		"the open loop decides the capacity",
		"closed loop, 8 clients: 3.37 req/s achieved, met; the open loop was not run at this rate or above",
		"capacity (open loop): 1.2 req/s, 246 tok/s of goodput",
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("report lacks %q:\n%s", want, txt)
		}
	}
	// the concurrency sweep's throughput still rose from 2 to 8 clients
	rise := rawField(t, files[4], "output_token_throughput", "avg")/rawField(t, files[3], "output_token_throughput", "avg") - 1
	if want := fmt.Sprintf("throughput never flattened: it still rose %.0f%% from 2 to 8 clients", 100*rise); !strings.Contains(txt, want) {
		t.Errorf("report lacks %q:\n%s", want, txt)
	}
	if n := strings.Count(txt, "replicas for 1,000 tok/s"); n != 1 {
		t.Errorf("replicas sized %d times; only the open loop sizes the fleet:\n%s", n, txt)
	}
	// an open-loop sweep alone carries no closed-loop warning
	out.Reset()
	_ = Report(&out, ReportOptions{Files: files[:3], SLO: chatSLO})
	if strings.Contains(out.String(), "warning: measured in a closed loop") {
		t.Errorf("open loop warned:\n%s", out.String())
	}
}

// TestLittlesLaw: a closed-loop run whose file lacks its achieved rate
// gets clients ÷ mean latency. On the real `vllm bench sweep` run at 2
// clients (mean_e2el_ms 166.33) that is 12.02 req/s, within 1 % of the
// 11.95 req/s the tool measured (the run's ramp and tail make up the
// rest).
func TestLittlesLaw(t *testing.T) {
	run := sweep8 + "run0.json"
	b, _ := os.ReadFile(run)
	cut := bytes.Replace(b, []byte(`"request_throughput": 11.950037467159987,`), nil, 1)
	if bytes.Equal(cut, b) {
		t.Fatal("fixture's request_throughput not found")
	}
	f := filepath.Join(t.TempDir(), "run0.json")
	_ = os.WriteFile(f, cut, 0o644)
	res := judge(t, f)
	got, how := res.Points[0].AchievedRate()
	want := 2 / (rawField(t, run, "mean_e2el_ms") / 1000)
	if !within(got, want, 1e-12) || !strings.Contains(how, "Little") {
		t.Fatalf("achieved %v (%s), want %v by Little's law", got, how, want)
	}
	if measured := rawField(t, run, "request_throughput"); !within(got, measured, 0.01) {
		t.Errorf("Little's law gives %v req/s, the tool measured %v", got, measured)
	}
	var out bytes.Buffer
	s, _ := res.Size(0, 0)
	_ = res.Write(&out, s, "")
	if !strings.Contains(out.String(), "12 (L)") || !strings.Contains(out.String(), "by Little's law") {
		t.Errorf("Little's law not said:\n%s", out.String())
	}
}

// TestAIPerfWrittenFiles: the files AIPerf 0.13.0 wrote against the test
// engine (make capacity-realtools, kept as testdata) read without the
// tool: AIPerf 0.13's export and records parse, the closed loop of 8
// clients met TTFT P95 <= 300 ms at its achieved rate while the Poisson
// open loop offered that rate missed it, with a TTFT P99 over ten times
// the closed loop's (the files' own figures); the open loop decides.
func TestAIPerfWrittenFiles(t *testing.T) {
	d := func(run string) string { return realDir + "aiperf/0.13.0-testengine-" + run }
	files := []string{d("concurrency2"), d("concurrency8"), d("poisson-half"), d("poisson-same")}
	slo := chatSLOp95
	sw, err := Read(files...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := JudgeEach(sw, slo)
	if err != nil {
		t.Fatal(err)
	}
	open, closed := res[0], res[1]
	c8, same := closed.Points[1], open.Points[1]
	if !c8.Exact || c8.Sampled || c8.Listed != c8.Counted || !strings.HasPrefix(c8.Version, "AIPerf 0.13.0") {
		t.Errorf("AIPerf 0.13 records: exact %v sampled %v listed %d counted %d version %q", c8.Exact, c8.Sampled, c8.Listed, c8.Counted, c8.Version)
	}
	offered := rawField(t, d("poisson-same")+"/profile_export_aiperf.json", "input_config", "phases", 1, "rate")
	achieved := rawField(t, d("concurrency8")+"/profile_export_aiperf.json", "request_throughput", "avg")
	if !within(offered, achieved, 0.01) || same.Rate != offered {
		t.Fatalf("the open loop offered %v req/s, the closed loop achieved %v", offered, achieved)
	}
	cp99 := rawField(t, d("concurrency8")+"/profile_export_aiperf.json", "time_to_first_token", "p99")
	op99 := rawField(t, d("poisson-same")+"/profile_export_aiperf.json", "time_to_first_token", "p99")
	if !c8.Met || same.Met || !(op99 > 10*cp99) {
		t.Errorf("closed loop met %v (TTFT P99 %v ms), open loop at its rate met %v (%v ms)", c8.Met, cp99, same.Met, op99)
	}
	var out bytes.Buffer
	if err := Report(&out, ReportOptions{Files: files, SLO: slo}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("closed loop, 8 clients: %s req/s achieved, met; open loop at %s req/s: missed", Sig3(achieved), Sig3(offered))
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "capacity (open loop): "+Sig3(open.Points[0].Rate)+" req/s") {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
}

// TestGuideLLMWrittenFiles: the reports GuideLLM 0.8.1 wrote against the
// test engine (make capacity-realtools-guidellm, kept as testdata): a
// concurrent profile (2 and 8 streams) is read as closed loops at the
// achieved rates the file gives, a Poisson profile as open loops; the
// 8-stream round met TTFT P95 <= 300 ms and the Poisson round offered its
// achieved rate missed it, its TTFT P99 over ten times higher (the file's
// own percentiles); the open loop decides.
func TestGuideLLMWrittenFiles(t *testing.T) {
	conc, pois := realDir+"guidellm/0.8.1-testengine-concurrent.json", realDir+"guidellm/0.8.1-testengine-poisson.json"
	sw, err := Read(conc, pois)
	if err != nil {
		t.Fatal(err)
	}
	res, err := JudgeEach(sw, chatSLOp95)
	if err != nil {
		t.Fatal(err)
	}
	open, closed := res[0], res[1]
	if !closed.ClosedLoop() || open.ClosedLoop() || !strings.HasPrefix(closed.Points[0].Version, "GuideLLM 0.8.1") {
		t.Fatalf("loops: open %v closed %v (%s)", open.ClosedLoop(), closed.ClosedLoop(), closed.Points[0].Version)
	}
	for i := range closed.Points {
		got, _ := closed.Points[i].AchievedRate()
		if want := rawField(t, conc, "benchmarks", i, "metrics", "requests_per_second", "successful", "mean"); got != want {
			t.Errorf("closed round %d: achieved %v, the file's %v", i+1, got, want)
		}
	}
	c8, same := closed.Points[1], open.Points[1]
	cp99 := rawField(t, conc, "benchmarks", 1, "metrics", "time_to_first_token_ms", "successful", "percentiles", "p99")
	op99 := rawField(t, pois, "benchmarks", 1, "metrics", "time_to_first_token_ms", "successful", "percentiles", "p99")
	if !c8.Met || same.Met || !within(same.Rate, c8.Rate, 0.01) || !(op99 > 10*cp99) {
		t.Errorf("8 streams met %v at %v req/s (TTFT P99 %v ms); Poisson at %v req/s met %v (%v ms)", c8.Met, c8.Rate, cp99, same.Rate, same.Met, op99)
	}
	var out bytes.Buffer
	if err := Report(&out, ReportOptions{Files: []string{conc, pois}, SLO: chatSLOp95}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "the open loop decides the capacity") || !strings.Contains(out.String(), "warning: measured in a closed loop of 8 clients") {
		t.Errorf("report:\n%s", out.String())
	}
}
