package capacity

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// TestDocsRealReport: the real report shown in docs/capacity.md is the
// command's output for that file and SLO, as it is now.
func TestDocsRealReport(t *testing.T) {
	doc := string(must(os.ReadFile("../docs/capacity.md")))
	_, rest, ok := strings.Cut(doc, "A real sweep, SGLang on an H200")
	if !ok {
		t.Fatal("docs/capacity.md no longer shows the real SGLang report")
	}
	_, rest, _ = strings.Cut(rest, "```\n")
	block, _, _ := strings.Cut(rest, "```")
	slo := goodput.SLO{Name: "med", Objectives: []goodput.Objective{{Kind: goodput.KindTTFT, Threshold: 0.1, Target: 0.5}, {Kind: goodput.KindITL, Threshold: 0.015, Target: 0.5}}}
	var out bytes.Buffer
	if err := Report(&out, ReportOptions{Files: []string{realDir + "sglang/h200-llama-3.3-70b-online.jsonl"}, SLO: slo}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), block) {
		t.Errorf("docs/capacity.md's block is not the report:\n%s\n--- the report:\n%s", block, out.String())
	}
}
