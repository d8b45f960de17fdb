package capacity

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// TestOneKneePerSLO: three SLOs on the worked example's sweep, one report.
// Each SLO's section is exactly the report of that SLO alone (a second
// path), the chat knee is the hand-worked 17 req/s and 3,330 tok/s, and
// the summary has one line per SLO. An SLO the file cannot be judged on
// (a P90 e2e the SGLang output lacks) is said, and the others reported.
func TestOneKneePerSLO(t *testing.T) {
	slos := []goodput.SLO{chatSLO,
		{Name: "copilot", Objectives: []goodput.Objective{{Kind: goodput.KindTTFT, Threshold: 0.2, Target: 0.99}, {Kind: goodput.KindITL, Threshold: 0.03, Target: 0.5}}},
		{Name: "batch", Objectives: []goodput.Objective{{Kind: goodput.KindE2E, Threshold: 60, Target: 0.9}}},
	}
	files := []string{"testdata/constructed/guidellm/benchmarks.json"}
	var all bytes.Buffer
	if err := ReportEach(&all, ReportOptions{Files: files}, slos); err != nil {
		t.Fatal(err)
	}
	txt := all.String()
	for _, slo := range slos {
		var one bytes.Buffer
		if err := Report(&one, ReportOptions{Files: files, SLO: slo}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(txt, "=== SLO \""+slo.Name+"\" ===\n"+one.String()) {
			t.Errorf("SLO %s: its section is not its own report:\n%s", slo.Name, one.String())
		}
	}
	_, summary, _ := strings.Cut(txt, "one knee per SLO, on the same sweep:\n")
	if !strings.Contains(summary, "chat     rate   17 req/s, 3,330 tok/s") || strings.Count(summary, "\n") != 4 {
		t.Errorf("summary:\n%s", txt)
	}
	sg := []string{realDir + "sglang/h200-llama-405b-online.jsonl"}
	p50 := goodput.SLO{Name: "p50", Objectives: []goodput.Objective{{Kind: goodput.KindTTFT, Threshold: 0.1, Target: 0.5}}}
	all.Reset()
	err := ReportEach(&all, ReportOptions{Files: sg}, []goodput.SLO{slos[2], p50})
	if err != nil || !strings.Contains(all.String(), `SLO "batch" cannot be judged on these files`) || !strings.Contains(all.String(), "batch  -") {
		t.Errorf("%v\n%s", err, all.String())
	}
	if err := ReportEach(&all, ReportOptions{Files: sg}, slos[2:]); err == nil || errors.Is(err, ErrRegressed) {
		t.Errorf("no SLO judged: %v", err)
	}
}
