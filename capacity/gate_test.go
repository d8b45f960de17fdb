package capacity

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// variant writes a copy of a real file with one field changed.
func variant(t *testing.T, file, old, new string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c := bytes.Replace(b, []byte(old), []byte(new), 1)
	if bytes.Equal(b, c) {
		t.Fatalf("%s has no %q", file, old)
	}
	f := filepath.Join(t.TempDir(), filepath.Base(file))
	if err := os.WriteFile(f, c, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func gate(t *testing.T, base, cur []string, anyway bool) (string, error) {
	t.Helper()
	var out bytes.Buffer
	slo := chatSLO
	if strings.HasSuffix(cur[0], ".jsonl") {
		// SGLang's outputs here hold medians only
		slo = goodput.SLO{Name: "p50", Objectives: []goodput.Objective{{Kind: goodput.KindTTFT, Threshold: 0.1, Target: 0.5}}}
	}
	err := Report(&out, ReportOptions{Files: cur, Baseline: base, SLO: slo, Peak: 1000, Hourly: 10, Currency: "EUR",
		MaxDrop: 0.05, CompareAnyway: anyway})
	return out.String(), err
}

// TestGateRefusesOtherMeasurements: a baseline that differs in the tool,
// the model, the token distribution or the arrival process is not a
// baseline: the gate refuses with ErrNotComparable (not ErrRegressed) and
// names each difference; --compare-anyway compares and says what differs.
func TestGateRefusesOtherMeasurements(t *testing.T) {
	run := sweep8 + "run0.json"
	sg := realDir + "sglang/h200-llama-3.3-70b-online.jsonl"
	lines := bytes.Split(bytes.TrimSpace(must(os.ReadFile(sg))), []byte("\n"))
	dir := t.TempDir()
	random4, sharegpt4 := filepath.Join(dir, "random4.jsonl"), filepath.Join(dir, "sharegpt4.jsonl")
	_ = os.WriteFile(random4, lines[2], 0o644)
	_ = os.WriteFile(sharegpt4, lines[5], 0o644)
	for _, c := range []struct {
		name      string
		base, cur []string
		want      []string
	}{
		{"tool and model", []string{realDir + "aiperf/0.10.0-concurrency2"}, []string{run},
			[]string{"tool: vllm-bench-serve, the baseline aiperf", "model: facebook/opt-125m, the baseline qwen3.6-nvfp4"}},
		{"model", []string{variant(t, run, `"model_id": "facebook/opt-125m"`, `"model_id": "facebook/opt-350m"`)}, []string{run},
			[]string{"model: facebook/opt-125m, the baseline facebook/opt-350m"}},
		{"token distribution", []string{random4}, []string{sharegpt4},
			[]string{"token distribution: data set sharegpt, the baseline data set random, 1024/1024 tokens in/out", "mean input tokens"}},
		{"output tokens", []string{variant(t, run, `"total_output_tokens": 128`, `"total_output_tokens": 256`)}, []string{run},
			[]string{"mean output tokens 16 a request, the baseline 32"}},
		{"arrival process", []string{variant(t, random4, `"request_rate": 4.0`, `"request_rate": 4.0, "burstiness": 0.5`)}, []string{random4},
			[]string{"arrival process: poisson, the baseline gamma (burstiness 0.5)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := gate(t, c.base, c.cur, false)
			if !errors.Is(err, ErrNotComparable) || errors.Is(err, ErrRegressed) || !strings.Contains(out, "NOT COMPARABLE") {
				t.Fatalf("err %v\n%s", err, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("lacks %q:\n%s", w, out)
				}
			}
			out, err = gate(t, c.base, c.cur, true)
			if errors.Is(err, ErrNotComparable) || !strings.Contains(out, "compared anyway") || !strings.Contains(out, c.want[0]) {
				t.Errorf("--compare-anyway: %v\n%s", err, out)
			}
		})
	}
}

// TestGatePlannerTerms: two settings of one real `vllm bench sweep`
// (max_num_seqs 4, then 8; same tool, model, tokens and clients) compare,
// in the planner's terms. The knee goodputs are worked here from the
// files' own totals: each setting's two runs are 256 tokens over their
// summed durations, and a run that missed the SLO (max_num_seqs 4, run 0,
// TTFT P99 762 ms) adds no good tokens. Replicas for 1,000 tok/s and the
// cost per million good tokens at 10 EUR/h follow.
func TestGatePlannerTerms(t *testing.T) {
	s4, s8 := realDir+"vllm/sweep-v0.25.1/max_num_seqs4/", realDir+"vllm/sweep-v0.25.1/max_num_seqs8/"
	dur := func(f string) float64 { return rawField(t, f, "duration") }
	good4 := 128 / (dur(s4+"run0.json") + dur(s4+"run1.json")) // run 1's tokens only
	good8 := 256 / (dur(s8+"run0.json") + dur(s8+"run1.json"))
	out, err := gate(t, []string{s4 + "summary.json"}, []string{s8 + "summary.json"}, false)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	n4, n8 := int(math.Ceil(1000/good4)), int(math.Ceil(1000/good8))
	c4, c8 := 10.0/3600/good4*1e6, 10.0/3600/good8*1e6
	want := fmt.Sprintf("goodput at the knee under SLO %q: %s tok/s, the baseline %s (+%s tok/s) = %d fewer replicas at 1,000 tok/s peak (%d, the baseline %d), %.2f EUR less per million good tokens (%.2f, the baseline %.2f)",
		"chat", Thousands(good8), Thousands(good4), Thousands(good8-good4), n4-n8, n8, n4, c4-c8, c8, c4)
	if !strings.Contains(out, want) || !strings.Contains(out, "regression gate: pass") {
		t.Errorf("lacks\n%s\n in:\n%s", want, out)
	}
	// the other way round it is a regression, not a refusal
	if _, err := gate(t, []string{s8 + "summary.json"}, []string{s4 + "summary.json"}, false); !errors.Is(err, ErrRegressed) {
		t.Errorf("max_num_seqs 8 → 4: %v", err)
	}
}
