package rules

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/internal/promtool"
)

// readmeQueries are the PromQL queries of the README's promql blocks, in
// order: each block split at blank lines.
func readmeQueries(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile("(?s)```promql\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
		for _, q := range strings.Split(m[1], "\n\n") {
			if q = strings.TrimSpace(q); q != "" {
				out = append(out, q)
			}
		}
	}
	return out
}

// The README's queries, evaluated by promtool over one busy and one idle
// engine, give the hand-computed values for the busy one and nothing at
// all for the idle one: no NaN from 0/0, no +Inf from energy over zero
// tokens. Over the busy engine, per minute: 60 requests judged of which 30
// good (attainment 0.5, and with a 0.75 target a burn rate of
// (1-0.5)/(1-0.75) = 2); 18,000 J (300 W) for 6,000 tokens (3 J/token);
// 3,000 lower-bound and 4,800 upper-bound good tokens (18000/3000 = 6 and
// 18000/4800 = 3.75 J per good token). The idle engine draws 50 W and
// serves nothing. Two daemons (two nodes) export the same SLO target, as
// in any fleet, so a query matching it must not be many-to-many.
func TestREADMEQueriesOnAnIdleEngine(t *testing.T) {
	bin := promtool.Path(t)
	queries := readmeQueries(t)
	busy := `target="busy",model="m",slo="chat",objective="ttft"`
	want := [][]string{
		{`{` + busy + `}`, "0.5"},
		{`{` + busy + `}`, "2"},
		{`{target="busy"}`, "3"},
		{`{target="busy",slo="chat",bound="lower"}`, "6", `{target="busy",slo="chat",bound="upper"}`, "3.75"},
	}
	if len(queries) != len(want) {
		t.Fatalf("the README has %d PromQL queries, this test expects %d: give the new one its expected values\n%q", len(queries), len(want), queries)
	}
	var b strings.Builder
	b.WriteString(`rule_files: []
tests:
  - interval: 1m
    input_series:
`)
	for _, s := range [][2]string{
		{`llm_slo_requests_total{engine="vllm",` + busy + `}`, "0+60x70"},
		{`llm_slo_good_requests_total{engine="vllm",` + busy + `}`, "0+30x70"},
		{`llm_slo_requests_total{engine="vllm",target="idle",model="m",slo="chat",objective="ttft"}`, "0+0x70"},
		{`llm_slo_good_requests_total{engine="vllm",target="idle",model="m",slo="chat",objective="ttft"}`, "0+0x70"},
		{`llm_slo_target_ratio{slo="chat",objective="ttft",instance="node-a:9835"}`, "0.75x70"},
		{`llm_slo_target_ratio{slo="chat",objective="ttft",instance="node-b:9835"}`, "0.75x70"},
		{`llm_engine_gpu_energy_joules_total{target="busy",namespace="",pod="",method="config",split="none"}`, "0+18000x70"},
		{`llm_engine_gpu_energy_joules_total{target="idle",namespace="",pod="",method="config",split="none"}`, "0+3000x70"},
		{`llm_generation_tokens_total{target="busy",engine="vllm",model="m"}`, "0+6000x70"},
		{`llm_generation_tokens_total{target="idle",engine="vllm",model="m"}`, "0+0x70"},
		{`llm_goodput_tokens_total{engine="vllm",target="busy",model="m",slo="chat",bound="lower"}`, "0+3000x70"},
		{`llm_goodput_tokens_total{engine="vllm",target="busy",model="m",slo="chat",bound="upper"}`, "0+4800x70"},
		{`llm_goodput_tokens_total{engine="vllm",target="idle",model="m",slo="chat",bound="lower"}`, "0+0x70"},
		{`llm_goodput_tokens_total{engine="vllm",target="idle",model="m",slo="chat",bound="upper"}`, "0+0x70"},
	} {
		fmt.Fprintf(&b, "      - series: '%s'\n        values: '%s'\n", s[0], s[1])
	}
	b.WriteString("    promql_expr_test:\n")
	for i, q := range queries {
		fmt.Fprintf(&b, "      - eval_time: 70m\n        expr: |\n")
		for _, line := range strings.Split(q, "\n") {
			fmt.Fprintf(&b, "          %s\n", line)
		}
		b.WriteString("        exp_samples:\n")
		for j := 0; j+1 < len(want[i]); j += 2 {
			fmt.Fprintf(&b, "          - labels: '%s'\n            value: %s\n", want[i][j], want[i][j+1])
		}
	}
	file := filepath.Join(t.TempDir(), "readme_test.yml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "test", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
}
