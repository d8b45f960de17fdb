package mixin

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Panel is one Grafana time series or stat panel.
type Panel struct {
	Title, Unit, Description string
	Exprs                    []Target
	// Stat panels show one number; their queries end in "or vector(0)"
	// so that zero reads 0, not "No data".
	Stat bool
}

// Target is one query of a panel.
type Target struct{ Expr, Legend string }

// Row groups panels under a title.
type Row struct {
	Title  string
	Panels []Panel
}

// Dashboard is one generated dashboard; UID is stable and is its file name.
type Dashboard struct {
	UID, Title string
	Rows       []Row
	vars       []map[string]any
}

// Queries lists every PromQL expression of the dashboard, variables'
// queries included (as label_values selectors they are not PromQL and are
// returned as their selector).
func (d Dashboard) Queries() []string {
	var out []string
	for _, r := range d.Rows {
		for _, p := range r.Panels {
			for _, q := range p.Exprs {
				out = append(out, q.Expr)
			}
		}
	}
	return out
}

// VariableSelectors are the series selectors of the label_values(…)
// variables.
func (d Dashboard) VariableSelectors() []string {
	var out []string
	for _, v := range d.vars {
		if q, ok := v["query"].(string); ok && strings.HasPrefix(q, "label_values(") {
			out = append(out, q[len("label_values("):strings.LastIndex(q, ",")])
		}
	}
	return out
}

// dashboard filters: raw engine series, recorded per-target series, and
// the daemon's own series.
func (c Config) fEngine(extra ...string) string {
	return strings.Join(append([]string{c.Selector, c.NodeLabel + `=~"$node"`, `instance=~"$instance"`, `target=~"$target"`}, extra...), ", ")
}

func (c Config) fModel(extra ...string) string {
	return c.fEngine(append([]string{`model=~"$model"`}, extra...)...)
}

func (c Config) fSLO(extra ...string) string {
	return c.fModel(append([]string{`slo=~"$slo"`}, extra...)...)
}

func (c Config) fDaemon(extra ...string) string {
	return strings.Join(append([]string{c.Selector, c.NodeLabel + `=~"$node"`, `instance=~"$instance"`}, extra...), ", ")
}

func (c Config) variables(names ...string) []map[string]any {
	ds := map[string]any{"type": "prometheus", "uid": "${datasource}"}
	q := func(name, label, query, desc string) map[string]any {
		return map[string]any{"name": name, "type": "query", "datasource": ds, "label": label, "description": desc,
			"query": query, "definition": query, "refresh": 2, "multi": true, "includeAll": true, "allValue": ".*",
			"sort": 1, "current": map[string]any{"text": "All", "value": "$__all"}}
	}
	all := map[string]map[string]any{
		"node": q("node", "Node", fmt.Sprintf("label_values(up{%s}, %s)", c.Selector, c.NodeLabel),
			"The node's name, as the scrape configuration sets it"),
		"instance": q("instance", "Daemon", fmt.Sprintf(`label_values(up{%s, %s=~"$node"}, instance)`, c.Selector, c.NodeLabel),
			"One goodput-exporter (one per node)"),
		"namespace": q("namespace", "Namespace", fmt.Sprintf(`label_values(llm_gpu_info{%s}, namespace)`, c.fDaemon()),
			"Namespace of the engine pods that hold GPUs (GPU attribution); filters the GPU series"),
		"target": q("target", "Target", fmt.Sprintf(`label_values(llm_up{%s}, target)`, c.fDaemon()),
			"An engine target of the daemons"),
		"model": q("model", "Model", fmt.Sprintf(`label_values(llm_generation_tokens_total{%s}, model)`, c.fEngine()), "Served model"),
		"slo":   q("slo", "SLO", fmt.Sprintf(`label_values(llm_slo_target_ratio{%s}, slo)`, c.fDaemon()), "SLO name"),
	}
	out := []map[string]any{{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"}}
	for _, n := range names {
		out = append(out, all[n])
	}
	return out
}

// Dashboards are the generated dashboards, in file order.
func (c Config) Dashboards() []Dashboard {
	return []Dashboard{c.overview(), c.failureModes(), c.gpuEnergy()}
}

func (c Config) overview() Dashboard {
	S, M, E := c.fSLO(), c.fModel(), c.fEngine()
	fleet := `model=~"$model", slo=~"$slo"`
	var burn []Target
	for _, w := range []string{"1h", "6h", "1d", "3d"} {
		burn = append(burn, Target{sloBurn(w) + "{" + S + "}", "{{target}} {{slo}}/{{objective}} " + w})
	}
	budget := fmt.Sprintf(`1 - (
  1 - sum_over_time(%[1]s{%[3]s}[%[4]s])
    / (sum_over_time(%[2]s{%[3]s}[%[4]s]) > 0)
)
  / on (%[5]s) group_left ()
    (1 - %[6]s)`, tileGood("1h"), tileRequests("1h"), S, c.BudgetPeriod, c.by("slo", "objective"),
		"llm_slo_target_ratio{"+c.fDaemon(`slo=~"$slo"`)+"}")
	return Dashboard{UID: "goodput-overview", Title: "goodput-exporter / SLOs and goodput",
		vars: c.variables("node", "instance", "target", "model", "slo"),
		Rows: []Row{
			{"Now", []Panel{
				{Title: "Targets down", Unit: "short", Stat: true,
					Description: "Engine targets whose last scrape failed (llm_up == 0).",
					Exprs:       []Target{{"count(llm_up{" + E + "} == 0) or vector(0)", "down"}}},
				{Title: "Error-budget burn alerts firing", Unit: "short", Stat: true,
					Exprs: []Target{{`count(ALERTS{alertname=~"LLMErrorBudgetBurn.*", alertstate="firing", ` + S + `}) or vector(0)`, "firing"}}},
				{Title: "Objectives the engine cannot measure", Unit: "short", Stat: true,
					Description: "SLO objectives with llm_slo_supported == 0: never judged, so never alerted on.",
					Exprs:       []Target{{"count(llm_slo_supported{" + S + "} == 0) or vector(0)", "unmeasurable"}}},
			}},
			{"SLO attainment and error budget", []Panel{
				{Title: "Attainment per objective (5m and 1h)", Unit: "percentunit",
					Description: "Share of judged requests that met the objective of their own node's SLO; no line while nothing is judged.",
					Exprs: []Target{{sloAttainment("5m") + "{" + S + "}", "{{target}} {{model}} {{slo}}/{{objective}} 5m"},
						{sloAttainment("1h") + "{" + S + "}", "{{target}} {{model}} {{slo}}/{{objective}} 1h"}}},
				{Title: "Error-budget burn rate", Unit: "short",
					Description: "(1 - attainment) / (1 - target) over 1h, 6h, 1d and 3d: 1 spends the budget exactly over the " + c.BudgetPeriod + " period; pages at " + ftoa(c.BurnAlerts[0].Factor) + "× over 1h.",
					Exprs:       burn},
				{Title: "Error budget left (" + c.BudgetPeriod + ")", Unit: "percentunit",
					Description: "1 - the burn rate over the last " + c.BudgetPeriod + " (from the hourly tiles; hours without judged requests left out). Negative: the budget is overspent.",
					Exprs:       []Target{{budget, "{{target}} {{slo}}/{{objective}}"}}},
				{Title: "Fleet attainment per model (5m)", Unit: "percentunit",
					Description: "Across every node: good over judged requests, each judged against its own node's objective.",
					Exprs:       []Target{{"model_slo_objective:llm_slo_attainment:ratio_rate5m{" + fleet + "}", "{{model}} {{slo}}/{{objective}}"}}},
			}},
			{"Goodput", []Panel{
				{Title: "Good tokens per second against all tokens", Unit: "short",
					Description: "Generation tokens of requests that met every objective of the SLO, between its lower and upper bound, against every generated token.",
					Exprs: []Target{{levelBound + ":llm_goodput_tokens:rate5m{" + S + "}", "{{target}} {{slo}} {{bound}}"},
						{"sum by (" + c.by("target") + ") (rate(llm_generation_tokens_total{" + M + "}[5m]))", "{{target}} all tokens"}}},
				{Title: "Good requests per second", Unit: "reqps",
					Exprs: []Target{{levelBound + ":llm_goodput_requests:rate5m{" + S + "}", "{{target}} {{slo}} {{bound}}"}}},
				{Title: "Fleet goodput per model", Unit: "short",
					Exprs: []Target{{"model_slo_bound:llm_goodput_tokens:rate5m{" + fleet + "}", "{{model}} {{slo}} {{bound}}"},
						{`model:llm_generation_tokens:rate5m{model=~"$model"}`, "{{model}} all tokens"}}},
				{Title: "Cost per million good tokens", Unit: "short",
					Description: "Hourly cost of the engine's GPUs over its good tokens; the lower goodput bound gives the higher cost.",
					Exprs:       []Target{{"target_slo_bound:llm_cost_per_million_good_tokens:ratio_rate5m{" + c.fEngine(`slo=~"$slo"`) + "}", "{{target}} {{slo}} {{bound}} ({{currency}})"}}},
			}},
			{"Engine pressure", []Panel{
				{Title: "Queue and running batch", Unit: "short",
					Exprs: []Target{{"sum by (target) (llm_requests_waiting{" + M + "})", "{{target}} waiting"},
						{"sum by (target) (llm_requests_running{" + M + "})", "{{target}} running"}}},
				{Title: "KV-cache usage", Unit: "percentunit",
					Exprs: []Target{{"max by (target) (llm_kv_cache_usage_ratio{" + M + "})", "{{target}}"}}},
				{Title: "Preemptions per second", Unit: "short",
					Exprs: []Target{{"sum by (target) (rate(llm_preemptions_total{" + M + "}[5m]))", "{{target}}"}}},
				{Title: "Prefix-cache hit ratio", Unit: "percentunit",
					Exprs: []Target{{"sum by (target) (rate(llm_prefix_cache_hits_total{" + M + "}[5m]))\n  / (sum by (target) (rate(llm_prefix_cache_queries_total{" + M + "}[5m])) > 0)", "{{target}}"}}},
				{Title: "TTFT p99", Unit: "s",
					Exprs: []Target{{"histogram_quantile(0.99, sum by (target, le) (rate(llm_time_to_first_token_seconds_bucket{" + M + "}[5m])))", "{{target}}"}}},
				{Title: "Inter-token latency p99", Unit: "s",
					Exprs: []Target{{"histogram_quantile(0.99, sum by (target, le) (rate(llm_inter_token_latency_seconds_bucket{" + M + "}[5m])))", "{{target}}"}}},
			}},
		}}
}

func (c Config) failureModes() Dashboard {
	E, M := c.fEngine(), c.fModel()
	sumT := func(m string) string { return "sum by (target) (" + m + "{" + M + "})" }
	rateT := func(m string) string { return "sum by (target) (rate(" + m + "{" + M + "}[5m]))" }
	p99 := func(m string) string {
		return "histogram_quantile(0.99, sum by (target, le) (rate(" + m + "_bucket{" + M + "}[5m])))"
	}
	gpu := func(m string, extra ...string) string {
		return m + "{" + c.fDaemon(extra...) + "}\n  and on (" + c.by("gpu", "uuid") + ") llm_gpu_info{" + c.fDaemon(`target=~"$target"`) + "}"
	}
	signals := map[string][]Panel{
		"queue_growth": {
			{Title: "Waiting and running", Unit: "short", Exprs: []Target{{sumT("llm_requests_waiting"), "{{target}} waiting"}, {sumT("llm_requests_running"), "{{target}} running"}}},
			{Title: "Queue time p99", Unit: "s", Exprs: []Target{{p99("llm_request_queue_time_seconds"), "{{target}}"}}}},
		"kv_preemption": {
			{Title: "KV-cache usage", Unit: "percentunit", Exprs: []Target{{"max by (target) (llm_kv_cache_usage_ratio{" + M + "})", "{{target}}"}}},
			{Title: "Preemptions per second", Unit: "short", Exprs: []Target{{rateT("llm_preemptions_total"), "{{target}}"}}}},
		"prefill_interference": {
			{Title: "Prompt tokens per second", Unit: "short", Exprs: []Target{{rateT("llm_prompt_tokens_total"), "{{target}}"}}},
			{Title: "Inter-token latency p99", Unit: "s", Exprs: []Target{{p99("llm_inter_token_latency_seconds"), "{{target}}"}}}},
		"kv_monopoly": {
			{Title: "KV-cache usage per running request", Unit: "percentunit", Exprs: []Target{{"max by (target) (llm_kv_cache_usage_ratio{" + M + "})\n  / (" + sumT("llm_requests_running") + " > 0)", "{{target}}"}}},
			{Title: "Waiting and running", Unit: "short", Exprs: []Target{{sumT("llm_requests_waiting"), "{{target}} waiting"}, {sumT("llm_requests_running"), "{{target}} running"}}}},
		"prefix_cache_collapse": {
			{Title: "Prefix-cache hit ratio", Unit: "percentunit", Exprs: []Target{{rateT("llm_prefix_cache_hits_total") + "\n  / (" + rateT("llm_prefix_cache_queries_total") + " > 0)", "{{target}}"}}},
			{Title: "TTFT p99", Unit: "s", Exprs: []Target{{p99("llm_time_to_first_token_seconds"), "{{target}}"}}}},
		"decode_saturation": {
			{Title: "Running batch", Unit: "short", Exprs: []Target{{sumT("llm_requests_running"), "{{target}}"}}},
			{Title: "Inter-token latency and TTFT p99", Unit: "s", Exprs: []Target{{p99("llm_inter_token_latency_seconds"), "{{target}} ITL"}, {p99("llm_time_to_first_token_seconds"), "{{target}} TTFT"}}}},
		"gpu_throttling": {
			{Title: "Throttle reasons active", Unit: "short", Exprs: []Target{{gpu("llm_gpu_throttled", `reason!="gpu_idle"`) + " == 1", "{{instance}} gpu {{gpu}} {{reason}}"}}},
			{Title: "SM clock against its maximum", Unit: "percentunit", Exprs: []Target{{gpu("llm_gpu_sm_clock_hertz") + "\n  / on (" + c.by("gpu", "uuid") + ") llm_gpu_sm_clock_max_hertz{" + c.fDaemon() + "}", "{{instance}} gpu {{gpu}}"}}}},
		"engine_stall": {
			{Title: "Tokens per second", Unit: "short", Exprs: []Target{{rateT("llm_generation_tokens_total"), "{{target}}"}}},
			{Title: "Waiting, running and up", Unit: "short", Exprs: []Target{{sumT("llm_requests_waiting"), "{{target}} waiting"}, {sumT("llm_requests_running"), "{{target}} running"}, {"llm_up{" + E + "}", "{{target}} up"}}}},
	}
	var rows []Row
	for _, mode := range FailureModes {
		panels := []Panel{
			{Title: "Verdict: " + mode, Unit: "short",
				Description: fmt.Sprintf("llm_failure_mode{mode=%q}: 1 while the classifier names the mode (raised after %d matching %s windows, cleared after %d clean ones).",
					mode, c.DiagnosisEnter, promDuration(c.DiagnosisWindow), c.DiagnosisLeave),
				Exprs: []Target{{`max by (target) (llm_failure_mode{` + M + `, mode="` + mode + `"})`, "{{target}}"}}},
			{Title: "Targets in " + mode + " now", Unit: "short", Stat: true,
				Exprs: []Target{{`count(llm_failure_mode{` + M + `, mode="` + mode + `"} == 1) or vector(0)`, "targets"}}},
		}
		rows = append(rows, Row{mode, append(panels, signals[mode]...)})
	}
	return Dashboard{UID: "goodput-failure-modes", Title: "goodput-exporter / failure modes",
		vars: c.variables("node", "instance", "target", "model"), Rows: rows}
}

func (c Config) gpuEnergy() Dashboard {
	E := c.fEngine()
	NS := c.fEngine(`namespace=~"$namespace"`)
	onTarget := func(m string, extra ...string) string {
		return m + "{" + c.fDaemon(extra...) + "}\n  and on (" + c.by("gpu", "uuid") + ") llm_gpu_info{" + c.fDaemon(`target=~"$target"`, `namespace=~"$namespace"`) + "}"
	}
	return Dashboard{UID: "goodput-gpu-energy", Title: "goodput-exporter / GPU energy and cost",
		vars: c.variables("node", "instance", "namespace", "target", "slo"),
		Rows: []Row{
			{"Power and energy", []Panel{
				{Title: "GPU backends down", Unit: "short", Stat: true,
					Description: "Daemons that cannot read their GPUs (goodput_exporter_gpu_backend_up == 0); absent with --gpu.backend none.",
					Exprs:       []Target{{"count(goodput_exporter_gpu_backend_up{" + c.fDaemon() + "} == 0) or vector(0)", "down"}}},
				{Title: "Engine GPU power", Unit: "watt",
					Description: "Board power of the GPUs attributed to each target, a shared GPU weighted by the target's token share.",
					Exprs:       []Target{{"sum by (target) (llm_engine_gpu_power_watts{" + NS + "})", "{{target}}"}}},
				{Title: "GPU board power", Unit: "watt",
					Exprs: []Target{{onTarget("llm_gpu_power_watts"), "{{instance}} gpu {{gpu}}"},
						{onTarget("llm_gpu_power_limit_watts"), "{{instance}} gpu {{gpu}} limit"}}},
				{Title: "Engine energy per hour", Unit: "joule",
					Exprs: []Target{{"sum by (target) (increase(llm_engine_gpu_energy_joules_total{" + NS + "}[1h]))", "{{target}}"}}},
			}},
			{"Per token", []Panel{
				{Title: "Joules per generated token", Unit: "short",
					Exprs: []Target{{"target:llm_engine_gpu_energy_joules_per_token:ratio_rate5m{" + E + "}", "{{target}}"}}},
				{Title: "Joules per good token", Unit: "short",
					Description: "Energy over good tokens; bound=\"lower\" divides by the lower goodput bound, so it is the higher figure.",
					Exprs:       []Target{{"target_slo_bound:llm_engine_gpu_energy_joules_per_good_token:ratio_rate5m{" + c.fEngine(`slo=~"$slo"`) + "}", "{{target}} {{slo}} {{bound}}"}}},
				{Title: "Cost per million good tokens", Unit: "short",
					Exprs: []Target{{"target_slo_bound:llm_cost_per_million_good_tokens:ratio_rate5m{" + c.fEngine(`slo=~"$slo"`) + "}", "{{target}} {{slo}} {{bound}} ({{currency}})"}}},
				{Title: "Hourly cost of the engines' GPUs", Unit: "short",
					Exprs: []Target{{"llm_engine_hourly_cost{" + E + "}", "{{target}} ({{currency}}, {{basis}})"}}},
			}},
			{"Clocks and throttling", []Panel{
				{Title: "SM clock against its maximum", Unit: "percentunit",
					Exprs: []Target{{onTarget("llm_gpu_sm_clock_hertz") + "\n  / on (" + c.by("gpu", "uuid") + ") llm_gpu_sm_clock_max_hertz{" + c.fDaemon() + "}", "{{instance}} gpu {{gpu}}"}}},
				{Title: "Throttle reasons active", Unit: "short",
					Exprs: []Target{{onTarget("llm_gpu_throttled", `reason!="gpu_idle"`) + " == 1", "{{instance}} gpu {{gpu}} {{reason}}"}}},
				{Title: "GPU utilisation", Unit: "percentunit",
					Exprs: []Target{{onTarget("llm_gpu_utilization_ratio"), "{{instance}} gpu {{gpu}}"}}},
				{Title: "Energy readings not used as they came", Unit: "short",
					Exprs: []Target{{"sum by (instance, reason) (increase(goodput_exporter_gpu_energy_glitches_total{" + c.fDaemon() + "}[1h]))", "{{instance}} {{reason}}"}}},
			}},
		}}
}

// JSON renders the dashboard.
func (d Dashboard) JSON() ([]byte, error) {
	var panels []map[string]any
	id, y := 1, 0
	ds := map[string]any{"type": "prometheus", "uid": "${datasource}"}
	for _, r := range d.Rows {
		panels = append(panels, map[string]any{"id": id, "type": "row", "title": r.Title, "collapsed": false,
			"gridPos": map[string]int{"h": 1, "w": 24, "x": 0, "y": y}, "panels": []any{}})
		id++
		y++
		x, rowH := 0, 0
		for _, p := range r.Panels {
			w, h := 8, 8
			if p.Stat {
				w, h = 4, 4
			}
			if x+w > 24 {
				x, y = 0, y+rowH
				rowH = 0
			}
			var targets []map[string]any
			for k, q := range p.Exprs {
				targets = append(targets, map[string]any{"refId": string(rune('A' + k)), "datasource": ds, "expr": q.Expr, "legendFormat": q.Legend})
			}
			typ := "timeseries"
			defaults := map[string]any{"unit": p.Unit}
			options := map[string]any{}
			if p.Stat {
				typ = "stat"
				defaults["noValue"] = "0"
				options = map[string]any{"reduceOptions": map[string]any{"calcs": []string{"lastNotNull"}, "fields": "", "values": false}}
			}
			panels = append(panels, map[string]any{
				"id": id, "type": typ, "title": p.Title, "description": p.Description, "datasource": ds,
				"gridPos":     map[string]int{"h": h, "w": w, "x": x, "y": y},
				"targets":     targets,
				"options":     options,
				"fieldConfig": map[string]any{"defaults": defaults, "overrides": []any{}},
			})
			id++
			x += w
			rowH = max(rowH, h)
		}
		y += rowH
	}
	var list []any
	for _, v := range d.vars {
		list = append(list, v)
	}
	out := map[string]any{
		"uid": d.UID, "title": d.Title, "schemaVersion": 39, "version": 1, "editable": true,
		"tags": []string{"goodput-exporter", "llm"}, "time": map[string]string{"from": "now-3h", "to": "now"},
		"refresh": "30s", "templating": map[string]any{"list": list}, "panels": panels,
	}
	j, err := json.MarshalIndent(out, "", "  ")
	return append(j, '\n'), err
}
