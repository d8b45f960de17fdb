// Package dashboards generates the Grafana dashboards shipped in this
// directory from code, so that panels, queries and UIDs are reviewed as
// code; dashboards_test.go fails when the committed JSON differs from what
// the code generates (rewrite it with go test ./dashboards -update).
package dashboards

import (
	"encoding/json"
)

// panel is one Grafana time series or stat panel.
type panel struct {
	title, unit, description string
	exprs                    []query
	stat                     bool
}

type query struct{ expr, legend string }

// row groups panels under a title.
type row struct {
	title  string
	panels []panel
}

const sel = `target=~"$target"`

// overviewRows is the overview dashboard: goodput first, then why it moved.
var overviewRows = []row{
	{"Goodput", []panel{
		{title: "Good tokens per second (joint bounds)", unit: "short",
			description: "Generation tokens of requests that met every objective of the SLO; the truth lies between the lower and upper bound.",
			exprs: []query{{`sum by (target, slo, bound) (rate(llm_goodput_tokens_total{` + sel + `}[5m]))`, "{{target}} {{slo}} {{bound}}"},
				{`sum by (target) (rate(llm_generation_tokens_total{` + sel + `}[5m]))`, "{{target}} all tokens"}}},
		{title: "Good requests per second", unit: "reqps",
			exprs: []query{{`sum by (target, slo, bound) (rate(llm_goodput_requests_total{` + sel + `}[5m]))`, "{{target}} {{slo}} {{bound}}"}}},
		{title: "Cost per million good tokens", unit: "short",
			description: "Hourly cost of the engine's GPUs over its good tokens; the lower goodput bound gives the higher cost.",
			exprs:       []query{{`target_slo_bound:llm_cost_per_million_good_tokens:ratio_rate5m{` + sel + `}`, "{{target}} {{slo}} {{bound}} ({{currency}})"}}},
	}},
	{"Failure modes", []panel{
		{title: "Failure mode named by the daemon", unit: "short",
			description: "1 while the daemon's classifier names the mode for the target (llm_failure_mode); the daemon's landing page and the llm_signal_* series carry the evidence. See the README's failure-mode sections for each remedy.",
			exprs:       []query{{`llm_failure_mode{` + sel + `} == 1`, "{{target}} {{mode}}"}}},
		{title: "Queue growth and the observed batch ceiling", unit: "short",
			description: "Growth of the waiting queue over the diagnosis window (requests per second) and the largest running batch seen over the baseline: the evidence of queue_growth.",
			exprs: []query{{`llm_signal_waiting_slope{` + sel + `}`, "{{target}} waiting slope /s"},
				{`llm_signal_running_ceiling{` + sel + `}`, "{{target}} batch ceiling"}}},
		{title: "Modes the target cannot judge", unit: "short", stat: true,
			description: "Failure modes whose signals the engine or GPU backend lacks (llm_failure_mode_supported 0): unsupported, not clear.",
			exprs:       []query{{`count by (target) (llm_failure_mode_supported{` + sel + `} == 0)`, "{{target}}"}}},
	}},
	{"SLO attainment", []panel{
		{title: "Attainment per objective (5m)", unit: "percentunit",
			exprs: []query{{`target_model_slo_objective:llm_slo_attainment:ratio_rate5m{` + sel + `}`, "{{target}} {{model}} {{slo}}/{{objective}}"}}},
		{title: "Error-budget burn rate (5m)", unit: "short",
			description: "(1 - attainment) / (1 - target): 1 spends the budget exactly over the SLO period.",
			exprs:       []query{{`target_model_slo_objective:llm_slo_burn_rate:ratio_rate5m{` + sel + `}`, "{{target}} {{slo}}/{{objective}}"}}},
		{title: "Objectives the engine cannot measure", unit: "short", stat: true,
			exprs: []query{{`count by (target, slo, objective) (llm_slo_supported{` + sel + `} == 0)`, "{{target}} {{slo}}/{{objective}}"}}},
	}},
	{"Engine pressure", []panel{
		{title: "Queue and running batch", unit: "short",
			exprs: []query{{`sum by (target) (llm_requests_waiting{` + sel + `})`, "{{target}} waiting"},
				{`sum by (target) (llm_requests_running{` + sel + `})`, "{{target}} running"}}},
		{title: "KV-cache usage", unit: "percentunit",
			exprs: []query{{`max by (target) (llm_kv_cache_usage_ratio{` + sel + `})`, "{{target}}"}}},
		{title: "Preemptions per second", unit: "short",
			exprs: []query{{`sum by (target) (rate(llm_preemptions_total{` + sel + `}[5m]))`, "{{target}}"}}},
		{title: "Prefix-cache hit ratio", unit: "percentunit",
			exprs: []query{{`sum by (target) (rate(llm_prefix_cache_hits_total{` + sel + `}[5m])) / sum by (target) (rate(llm_prefix_cache_queries_total{` + sel + `}[5m]))`, "{{target}}"}}},
		{title: "TTFT p99", unit: "s",
			exprs: []query{{`histogram_quantile(0.99, sum by (target, le) (rate(llm_time_to_first_token_seconds_bucket{` + sel + `}[5m])))`, "{{target}}"}}},
		{title: "Inter-token latency p99", unit: "s",
			exprs: []query{{`histogram_quantile(0.99, sum by (target, le) (rate(llm_inter_token_latency_seconds_bucket{` + sel + `}[5m])))`, "{{target}}"}}},
	}},
	{"GPUs and energy", []panel{
		{title: "Engine GPU power", unit: "watt",
			exprs: []query{{`sum by (target) (llm_engine_gpu_power_watts{` + sel + `})`, "{{target}}"}}},
		{title: "Joules per generated token", unit: "short",
			exprs: []query{{`sum by (target) (rate(llm_engine_gpu_energy_joules_total{` + sel + `}[5m])) / sum by (target) (rate(llm_generation_tokens_total{` + sel + `}[5m]))`, "{{target}}"}}},
		{title: "SM clock against its maximum", unit: "percentunit",
			exprs: []query{{`llm_gpu_sm_clock_hertz / llm_gpu_sm_clock_max_hertz`, "gpu {{gpu}}"}}},
		{title: "Throttle reasons active", unit: "short",
			exprs: []query{{`llm_gpu_throttled{reason!="gpu_idle"} == 1`, "gpu {{gpu}} {{reason}}"}}},
		{title: "Targets up", unit: "short", stat: true,
			exprs: []query{{`llm_up{` + sel + `}`, "{{target}}"}}},
	}},
}

// Overview renders the overview dashboard.
func Overview() ([]byte, error) {
	return render("goodput-overview", "goodput-exporter / overview", overviewRows)
}

// Queries lists every PromQL expression of a dashboard, for linting.
func Queries(rows []row) []string {
	var out []string
	for _, r := range rows {
		for _, p := range r.panels {
			for _, q := range p.exprs {
				out = append(out, q.expr)
			}
		}
	}
	return out
}

func render(uid, title string, rows []row) ([]byte, error) {
	var panels []map[string]any
	id, y := 1, 0
	ds := map[string]any{"type": "prometheus", "uid": "${datasource}"}
	for _, r := range rows {
		panels = append(panels, map[string]any{"id": id, "type": "row", "title": r.title, "collapsed": false,
			"gridPos": map[string]int{"h": 1, "w": 24, "x": 0, "y": y}, "panels": []any{}})
		id++
		y++
		for i, p := range r.panels {
			var targets []map[string]any
			for k, q := range p.exprs {
				targets = append(targets, map[string]any{"refId": string(rune('A' + k)), "datasource": ds, "expr": q.expr, "legendFormat": q.legend})
			}
			typ := "timeseries"
			if p.stat {
				typ = "stat"
			}
			panels = append(panels, map[string]any{
				"id": id, "type": typ, "title": p.title, "description": p.description, "datasource": ds,
				"gridPos":     map[string]int{"h": 8, "w": 8, "x": (i % 3) * 8, "y": y + (i/3)*8},
				"targets":     targets,
				"fieldConfig": map[string]any{"defaults": map[string]any{"unit": p.unit}, "overrides": []any{}},
			})
			id++
		}
		y += ((len(r.panels) + 2) / 3) * 8
	}
	d := map[string]any{
		"uid": uid, "title": title, "schemaVersion": 39, "version": 1, "editable": true,
		"tags": []string{"goodput-exporter", "llm"}, "time": map[string]string{"from": "now-3h", "to": "now"},
		"refresh": "30s",
		"templating": map[string]any{"list": []any{
			map[string]any{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"},
			map[string]any{"name": "target", "type": "query", "datasource": ds, "label": "Target",
				"query": "label_values(llm_up, target)", "refresh": 2, "multi": true, "includeAll": true,
				"current": map[string]any{"text": "All", "value": "$__all"}},
		}},
		"panels": panels,
	}
	return json.MarshalIndent(d, "", "  ")
}
