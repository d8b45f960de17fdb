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
