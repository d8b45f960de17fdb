package mixin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/internal/promtool"
)

// panelQuery is the first query of the panel titled title.
func panelQuery(t *testing.T, uid, title string) string {
	t.Helper()
	for _, d := range Default().Dashboards() {
		if d.UID != uid {
			continue
		}
		for _, r := range d.Rows {
			for _, p := range r.Panels {
				if p.Title == title {
					return p.Exprs[0].Expr
				}
			}
		}
	}
	t.Fatalf("%s has no panel %q", uid, title)
	return ""
}

// The dashboards' filters select the right targets, evaluated by
// promtool. Three targets on two nodes:
//
//   - "static" on n1: configured in the daemon's file, so no namespace
//     label; serves model m1; in queue_growth; GPU 0 is attributed to it;
//   - "team-b/pod-1" on n2: found by Kubernetes discovery, namespace
//     team-b; serves model m2; not in queue_growth; GPU 2 is its own;
//   - "down" on n1: llm_up 0, so it serves no model (no token series);
//
// and GPU 1 on n1 attributed to no target. By hand, with Grafana's "All"
// being ".*":
//
//	selection                    targets shown         GPUs shown
//	all                          static, team-b, down  0, 1, 2
//	namespace team-b             team-b                2
//	model m1                     static                0
//	namespace team-b, model m1   none                  none
//	target static                static                0
//	node n2                      team-b                2
//
// The stat "Targets in queue_growth now" counts static under all and
// model m1, else 0 (not No data). The recorded attainment, which has a
// model but no namespace label, follows the same table.
func TestDashboardFiltersSelectTargets(t *testing.T) {
	bin := promtool.Path(t)
	const d1 = `job="goodput-exporter", instance="n1:9835", node="n1"`
	const d2 = `job="goodput-exporter", instance="n2:9835", node="n2"`
	static := d1 + `, target="static"`
	teamB := d2 + `, target="team-b/pod-1", namespace="team-b", pod="pod-1"`
	down := d1 + `, target="down"`
	series := []string{
		`llm_up{` + static + `, engine="vllm"}`, "1",
		`llm_up{` + teamB + `, engine="vllm"}`, "1",
		`llm_up{` + down + `, engine="vllm"}`, "0",
		`llm_generation_tokens_total{` + static + `, engine="vllm", model="m1"}`, "100",
		`llm_generation_tokens_total{` + teamB + `, engine="vllm", model="m2"}`, "100",
		`llm_failure_mode{` + static + `, engine="vllm", mode="queue_growth"}`, "1",
		`llm_failure_mode{` + teamB + `, engine="vllm", mode="queue_growth"}`, "0",
		`llm_failure_mode{` + down + `, engine="vllm", mode="queue_growth"}`, "0",
		`llm_gpu_info{` + d1 + `, gpu="0", uuid="GPU-0", name="H100", target="static", pod="", namespace=""}`, "1",
		`llm_gpu_info{` + d1 + `, gpu="1", uuid="GPU-1", name="H100", target="", pod="", namespace=""}`, "1",
		`llm_gpu_info{` + d2 + `, gpu="2", uuid="GPU-2", name="H100", target="team-b/pod-1", pod="pod-1", namespace="team-b"}`, "1",
		`llm_gpu_power_watts{` + d1 + `, gpu="0", uuid="GPU-0"}`, "300",
		`llm_gpu_power_watts{` + d1 + `, gpu="1", uuid="GPU-1"}`, "60",
		`llm_gpu_power_watts{` + d2 + `, gpu="2", uuid="GPU-2"}`, "500",
		sloAttainment("5m") + `{` + static + `, engine="vllm", model="m1", slo="chat", objective="ttft"}`, "0.9",
		sloAttainment("5m") + `{` + teamB + `, engine="vllm", model="m2", slo="chat", objective="ttft"}`, "0.99",
	}
	verdict := map[string]string{
		"static": `{` + static + `}`,
		"team-b": `{` + d2 + `, target="team-b/pod-1"}`, // max by (daemon, target) drops namespace
		"down":   `{` + down + `}`,
	}
	verdictValue := map[string]string{"static": "1", "team-b": "0", "down": "0"}
	power := map[string]string{
		"0": `llm_gpu_power_watts{` + d1 + `, gpu="0", uuid="GPU-0"}`,
		"1": `llm_gpu_power_watts{` + d1 + `, gpu="1", uuid="GPU-1"}`,
		"2": `llm_gpu_power_watts{` + d2 + `, gpu="2", uuid="GPU-2"}`,
	}
	powerValue := map[string]string{"0": "300", "1": "60", "2": "500"}
	attainment := map[string]string{
		"static": sloAttainment("5m") + `{` + static + `, engine="vllm", model="m1", slo="chat", objective="ttft"}`,
		"team-b": sloAttainment("5m") + `{` + teamB + `, engine="vllm", model="m2", slo="chat", objective="ttft"}`,
	}
	attainmentValue := map[string]string{"static": "0.9", "team-b": "0.99"}

	cases := []struct {
		name                 string
		node, ns, model, tgt string
		targets, gpus        []string
		inQueueGrowth        string
	}{
		{"all", ".*", ".*", ".*", ".*", []string{"static", "team-b", "down"}, []string{"0", "1", "2"}, "1"},
		{"namespace team-b", ".*", "team-b", ".*", ".*", []string{"team-b"}, []string{"2"}, "0"},
		{"model m1", ".*", ".*", "m1", ".*", []string{"static"}, []string{"0"}, "1"},
		{"namespace team-b, model m1", ".*", "team-b", "m1", ".*", nil, nil, "0"},
		{"target static", ".*", ".*", ".*", "static", []string{"static"}, []string{"0"}, "1"},
		{"node n2", "n2", ".*", ".*", ".*", []string{"team-b"}, []string{"2"}, "0"},
	}
	queries := map[string]string{
		"verdict":    panelQuery(t, "goodput-failure-modes", "Verdict: queue_growth"),
		"stat":       panelQuery(t, "goodput-failure-modes", "Targets in queue_growth now"),
		"power":      panelQuery(t, "goodput-gpu-energy", "GPU board power"),
		"attainment": panelQuery(t, "goodput-overview", "Attainment per objective (5m and 1h)"),
	}
	var b strings.Builder
	b.WriteString("rule_files: []\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n")
	for i := 0; i < len(series); i += 2 {
		fmt.Fprintf(&b, "      - series: %q\n        values: %q\n", series[i], series[i+1]+"x5")
	}
	b.WriteString("    promql_expr_test:\n")
	for _, tc := range cases {
		vars := strings.NewReplacer("$cluster", ".*", "$node", tc.node, "$instance", ".*", "$namespace", tc.ns, "$target", tc.tgt, "$model", tc.model, "$slo", ".*")
		exp := func(q string, samples map[string]string, values map[string]string, keys []string) {
			fmt.Fprintf(&b, "      # %s\n      - expr: %q\n        eval_time: 2m\n        exp_samples:", tc.name, vars.Replace(q))
			if len(keys) == 0 {
				b.WriteString(" []\n")
				return
			}
			b.WriteString("\n")
			for _, k := range keys {
				fmt.Fprintf(&b, "          - labels: %q\n            value: %s\n", samples[k], values[k])
			}
		}
		exp(queries["verdict"], verdict, verdictValue, tc.targets)
		exp(queries["stat"], map[string]string{"n": "{}"}, map[string]string{"n": tc.inQueueGrowth}, []string{"n"})
		exp(queries["power"], power, powerValue, tc.gpus)
		var att []string
		for _, k := range tc.targets {
			if _, ok := attainment[k]; ok {
				att = append(att, k)
			}
		}
		exp(queries["attainment"], attainment, attainmentValue, att)
	}
	path := filepath.Join(t.TempDir(), "filters_test.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "test", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
