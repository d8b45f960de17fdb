package mixin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/internal/promtool"
)

// A share panel reads 0, not "no data", on an engine that has the family
// but never reported the label value: vllm-0 finished only with
// reason="stop" (0 in error), vllm-1 one request in 4 with "error"
// (0.25). The panel's query runs in promtool as a recording rule.
func TestSharePanelReadsZero(t *testing.T) {
	bin := promtool.Path(t)
	q := dashboardVars.Replace(panelQuery(t, "goodput-failure-modes", "Share of finished requests in error"))
	dir := t.TempDir()
	rules := fmt.Sprintf("groups:\n  - name: panel\n    rules:\n      - record: panel:share\n        expr: %q\n", q)
	lbl := func(target, reason string) string {
		return fmt.Sprintf(`llm_requests_finished_total{job="goodput-exporter", instance="a:9835", node="a", target=%q, engine="vllm", model="m", reason=%q}`, target, reason)
	}
	test := fmt.Sprintf(`rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 15s
    input_series:
      - series: '%s'
        values: '0+60x40'
      - series: '%s'
        values: '0+45x40'
      - series: '%s'
        values: '0+15x40'
    promql_expr_test:
      - expr: panel:share
        eval_time: 9m
        exp_samples:
          - labels: 'panel:share{job="goodput-exporter", instance="a:9835", node="a", target="vllm-0"}'
            value: 0
          - labels: 'panel:share{job="goodput-exporter", instance="a:9835", node="a", target="vllm-1"}'
            value: 0.25
`, lbl("vllm-0", "stop"), lbl("vllm-1", "stop"), lbl("vllm-1", "error"))
	for name, body := range map[string]string{"rules.yml": rules, "test.yml": test} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "test", "rules", "test.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
}
