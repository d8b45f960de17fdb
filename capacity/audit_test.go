package capacity

import (
	"strings"
	"testing"
)

func auditOf(t *testing.T, files ...string) map[string]AuditLine {
	t.Helper()
	out := map[string]AuditLine{}
	for _, l := range judge(t, files...).Audit() {
		out[l.Check] = l
	}
	if len(out) != 8 {
		t.Fatalf("%d audit lines", len(out))
	}
	return out
}

// TestAudit: each line of the checklist on real files, with its evidence.
// GuideLLM 0.5.0.dev0's concurrent run sent one fixed length (output
// tokens P50 = P99 = 1,024 in the file), as a closed loop, to
// http://0.0.0.0:8000 (the same host), with its version and model, and no
// energy: an anecdote. AIPerf 0.8.0 sent over the network to two hosts;
// the worked example's AIPerf files carry GPU energy and a round past the
// knee that missed.
func TestAudit(t *testing.T) {
	g05 := realDir + "guidellm/v0.5.0.dev0-concurrent4-trimmed.json"
	if a, b := rawField(t, g05, "benchmarks", 0, "metrics", "output_token_count", "successful", "percentiles", "p50"),
		rawField(t, g05, "benchmarks", 0, "metrics", "output_token_count", "successful", "percentiles", "p99"); a != b {
		t.Fatalf("fixture's output lengths vary: %v, %v", a, b)
	}
	a := auditOf(t, g05)
	for check, want := range map[string]struct {
		pass bool
		ev   string
	}{
		"realistic load":                     {false, "one fixed length"},
		"a declared SLO":                     {true, "TTFT P99 <= 500ms"},
		"extended past the knee":             {false, "no round above the best one missed"},
		"open-loop arrivals":                 {false, "a closed loop only"},
		"the client's place":                 {true, "http://0.0.0.0:8000 (the same host"},
		"versioned output with its metadata": {true, "GuideLLM 0.5.0.dev0, model Qwen/Qwen3-4B-Thinking-2507"},
		"energy measured alongside":          {false, "no GPU energy"},
	} {
		if l := a[check]; l.Pass != want.pass || !strings.Contains(l.Evidence, want.ev) {
			t.Errorf("GuideLLM 0.5 %s: pass %v %q; want %v %q", check, l.Pass, l.Evidence, want.pass, want.ev)
		}
	}
	if l := auditOf(t, realDir+"aiperf/0.8.0-concurrency1")["the client's place"]; !l.Pass || !strings.Contains(l.Evidence, "192.168.19.150:8080") ||
		!strings.Contains(l.Evidence, "over the network") {
		t.Errorf("AIPerf 0.8: %+v", l)
	}
	w := auditOf(t, glob(t, "testdata/constructed/aiperf/round*")...)
	if !w["energy measured alongside"].Pass || !strings.Contains(w["extended past the knee"].Evidence, "round 7 (20 req/s) missed") {
		t.Errorf("worked example: %+v", w)
	}
	txt := reportText(t, chatSLO, g05)
	if !strings.Contains(txt, "4 of 8 lines fail: this sweep is an anecdote, not a capacity") || !strings.Contains(txt, "[ ] realistic load") {
		t.Errorf("verdict:\n%s", txt)
	}
	sg := realDir + "sglang/h200-llama-3.3-70b-online.jsonl"
	sw := must(Read(sg)).Split()[1]
	res, err := Judge(sw, chatSLOp50)
	if err != nil {
		t.Fatal(err)
	}
	if l := res.Audit()[0]; !l.Pass || l.Evidence != "data set sharegpt" {
		t.Errorf("SGLang ShareGPT: %+v", l)
	}
}
