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

// queryDocs are the docs whose promql blocks this test evaluates, in
// order: the SLO queries, then the energy ones.
var queryDocs = []string{"../docs/slos.md", "../docs/gpu.md"}

// docQueries are the PromQL queries of the promql blocks of queryDocs, in
// order: each block split at blank lines.
func docQueries(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, doc := range queryDocs {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile("(?s)```promql\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
			for _, q := range strings.Split(m[1], "\n\n") {
				if q = strings.TrimSpace(q); q != "" {
					out = append(out, q)
				}
			}
		}
	}
	return out
}

// The docs' queries, evaluated by promtool over two daemons (nodes a
// and b), give the hand-computed values for the busy engines and nothing
// at all for the idle one: no NaN from 0/0, no +Inf from energy over zero
// tokens. Both nodes run an engine named "busy" under the SLO chat/ttft,
// node a with target 0.75, node b with 0.5: the queries must keep them
// apart and judge each against its own node's target. Per minute:
//   - a/busy: 60 requests judged, 30 good (attainment 0.5, burn rate
//     (1-0.5)/(1-0.75) = 2); 18,000 J (300 W) for 6,000 tokens
//     (3 J/token); 3,000 lower-bound and 4,800 upper-bound good tokens
//     (18000/3000 = 6 and 18000/4800 = 3.75 J per good token).
//   - b/busy: 60 judged, 45 good (0.75, burn (1-0.75)/(1-0.5) = 0.5);
//     6,000 J for 6,000 tokens (1 J/token); no goodput series.
//   - b/idle draws 50 W and serves nothing.
func TestDocQueriesOnAnIdleEngine(t *testing.T) {
	bin := promtool.Path(t)
	queries := docQueries(t)
	const a, b = `instance="a:9835",job="goodput-exporter"`, `instance="b:9835",job="goodput-exporter"`
	obj := `target="busy",model="m",slo="chat",objective="ttft"`
	want := [][]string{
		{`{instance="a:9835",` + obj + `}`, "0.5", `{instance="b:9835",` + obj + `}`, "0.75"},
		{`{` + a + `,` + obj + `}`, "2", `{` + b + `,` + obj + `}`, "0.5"},
		{`{instance="a:9835",target="busy"}`, "3", `{instance="b:9835",target="busy"}`, "1"},
		{`{instance="a:9835",target="busy",slo="chat",bound="lower"}`, "6", `{instance="a:9835",target="busy",slo="chat",bound="upper"}`, "3.75"},
	}
	if len(queries) != len(want) {
		t.Fatalf("%v have %d PromQL queries, this test expects %d: give the new one its expected values\n%q", queryDocs, len(queries), len(want), queries)
	}
	var sb strings.Builder
	sb.WriteString(`rule_files: []
tests:
  - interval: 1m
    input_series:
`)
	idle := `target="idle",model="m",slo="chat",objective="ttft"`
	en := `namespace="",pod="",method="config",split="none"`
	for _, s := range [][2]string{
		{`llm_slo_requests_total{engine="vllm",` + a + `,` + obj + `}`, "0+60x70"},
		{`llm_slo_good_requests_total{engine="vllm",` + a + `,` + obj + `}`, "0+30x70"},
		{`llm_slo_requests_total{engine="vllm",` + b + `,` + obj + `}`, "0+60x70"},
		{`llm_slo_good_requests_total{engine="vllm",` + b + `,` + obj + `}`, "0+45x70"},
		{`llm_slo_requests_total{engine="vllm",` + b + `,` + idle + `}`, "0+0x70"},
		{`llm_slo_good_requests_total{engine="vllm",` + b + `,` + idle + `}`, "0+0x70"},
		{`llm_slo_target_ratio{slo="chat",objective="ttft",` + a + `}`, "0.75x70"},
		{`llm_slo_target_ratio{slo="chat",objective="ttft",` + b + `}`, "0.5x70"},
		{`llm_engine_gpu_energy_joules_total{target="busy",` + a + `,` + en + `}`, "0+18000x70"},
		{`llm_engine_gpu_energy_joules_total{target="busy",` + b + `,` + en + `}`, "0+6000x70"},
		{`llm_engine_gpu_energy_joules_total{target="idle",` + b + `,` + en + `}`, "0+3000x70"},
		{`llm_generation_tokens_total{target="busy",engine="vllm",model="m",` + a + `}`, "0+6000x70"},
		{`llm_generation_tokens_total{target="busy",engine="vllm",model="m",` + b + `}`, "0+6000x70"},
		{`llm_generation_tokens_total{target="idle",engine="vllm",model="m",` + b + `}`, "0+0x70"},
		{`llm_goodput_tokens_total{engine="vllm",target="busy",model="m",slo="chat",bound="lower",` + a + `}`, "0+3000x70"},
		{`llm_goodput_tokens_total{engine="vllm",target="busy",model="m",slo="chat",bound="upper",` + a + `}`, "0+4800x70"},
		{`llm_goodput_tokens_total{engine="vllm",target="idle",model="m",slo="chat",bound="lower",` + b + `}`, "0+0x70"},
		{`llm_goodput_tokens_total{engine="vllm",target="idle",model="m",slo="chat",bound="upper",` + b + `}`, "0+0x70"},
	} {
		fmt.Fprintf(&sb, "      - series: '%s'\n        values: '%s'\n", s[0], s[1])
	}
	sb.WriteString("    promql_expr_test:\n")
	for i, q := range queries {
		fmt.Fprintf(&sb, "      - eval_time: 70m\n        expr: |\n")
		for _, line := range strings.Split(q, "\n") {
			fmt.Fprintf(&sb, "          %s\n", line)
		}
		sb.WriteString("        exp_samples:\n")
		for j := 0; j+1 < len(want[i]); j += 2 {
			fmt.Fprintf(&sb, "          - labels: '%s'\n            value: %s\n", want[i][j], want[i][j+1])
		}
	}
	file := filepath.Join(t.TempDir(), "docs_test.yml")
	if err := os.WriteFile(file, []byte(sb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "test", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
}
