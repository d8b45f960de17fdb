package main

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

const windowDir = "../../exporter/testdata/window/"

// slo-report over the same two captures must print the numbers the live
// series pin in exporter/testdata/window/golden.prom.
func TestSLOReportMatchesLiveSeries(t *testing.T) {
	out, errOut, err := runArgs("slo-report", "--config.file", windowDir+"slos.yml", "--target", "vllm-a",
		"--window", "60s", windowDir+"t0.prom", windowDir+"t1.prom")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	f, err := os.Open(windowDir + "golden.prom")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, fam := range []string{"llm_slo_requests_total", "llm_slo_good_requests_total"} {
		for _, m := range mfs[fam].GetMetric() {
			lbl := map[string]string{}
			for _, lp := range m.GetLabel() {
				lbl[lp.GetName()] = lp.GetValue()
			}
			row := reportRow(t, out, lbl["slo"], lbl["objective"])
			col := 5 // JUDGED
			want := strconv.FormatFloat(m.GetCounter().GetValue(), 'f', 0, 64)
			if fam == "llm_slo_good_requests_total" {
				col, want = 6, strconv.FormatFloat(m.GetCounter().GetValue(), 'f', 1, 64)
			}
			if row[col] != want {
				t.Errorf("%s %s/%s: report says %s, live series %s", fam, lbl["slo"], lbl["objective"], row[col], want)
			}
			checked++
		}
	}
	if checked != 12 {
		t.Errorf("checked %d values", checked)
	}
	// chat's lower bound: 179.8 of 230 (the live llm_goodput_requests_total
	// {bound="lower"}): 230 − (25 + 1.2 + 20 + 2) failed, less the 2 tpot
	// requests in the bucket straddling 60 ms.
	for _, want := range []string{"window 1m0s, cost 5.00 EUR/h", "chat   0.7817..0.8913  3.00..3.42  305.6..1085.7  1.28..4.55"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// reportRow finds the objective line of one SLO in the report, split in
// columns: MODEL SLO OBJECTIVE THRESHOLD TARGET JUDGED GOOD ...
func reportRow(t *testing.T, report, slo, objective string) []string {
	t.Helper()
	for _, line := range strings.Split(report, "\n") {
		f := strings.Fields(line)
		if len(f) > 6 && f[1] == slo && f[2] == objective {
			return f
		}
	}
	t.Fatalf("no report line for %s/%s:\n%s", slo, objective, report)
	return nil
}

func TestSLOReportNeedsAWindowForFiles(t *testing.T) {
	_, errOut, err := runArgs("slo-report", "--config.file", windowDir+"slos.yml", windowDir+"t0.prom", windowDir+"t1.prom")
	if err == nil || !strings.Contains(errOut, "--window is required") {
		t.Fatalf("err %v, stderr %s", err, errOut)
	}
}

// --target takes the target's model: from the file, as the daemon labels
// the series of an engine that carries none (llama.cpp b11669, two real
// captures of one server): the SLO matching that model applies (its TTFT
// objective is unsupported on llama.cpp, which is what the row says),
// instead of every series falling under "unknown", which no SLO matches.
// A --model on the command line still wins.
func TestSLOReportTakesTheTargetsModel(t *testing.T) {
	const caps = "../../collector/testdata/fixtures/llamacpp/llamacpp-b11669-0.7.0-debian-"
	args := []string{"slo-report", "--config.file", "testdata/sloreport/model.yml", "--target", "cpu-a", "--window", "60s",
		caps + "light-load.prom", caps + "overload.prom"}
	out, errOut, err := runArgs(args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if row := reportRow(t, out, "chat", "ttft"); row[0] != "tiny-llama" || row[7] != "unsupported" {
		t.Errorf("row %q, want tiny-llama's ttft unsupported", row)
	}
	if strings.Contains(out, "no SLO applies") || !strings.Contains(out, "target cpu-a (llamacpp)") {
		t.Errorf("report:\n%s", out)
	}
	out, errOut, err = runArgs(append(args[:1:1], append([]string{"--model", "other"}, args[1:]...)...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(out, "models no SLO applies to: other") {
		t.Errorf("--model other: want it to win over the file's model:\n%s", out)
	}
}
