package mixin

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/goodput-exporter/goodput-exporter/diagnosis"
)

// Panel is one Grafana time series or stat panel.
type Panel struct {
	Title, Unit, Description string
	Exprs                    []Target
	// Stat panels show one number per cluster (Config.statCount); their
	// queries end in "or on () vector(0)" so that zero reads 0, not
	// "No data".
	Stat bool
	// Scope says which variables the panel's queries honour.
	Scope Scope
	// Threshold, when set, is drawn as a dashed line: the classifier's
	// default threshold for the signal (diagnosis.DefaultThresholds).
	Threshold *float64
	// NoValue is what the panel shows when its queries return nothing:
	// the engines and run-time declarations that leave it empty, derived
	// from the support matrix (Config.noValue).
	NoValue string
}

// Scope is what a panel's series describe, and so which dashboard
// variables its queries must filter on.
type Scope int

const (
	// PerTarget panels show engine targets: node, instance, namespace,
	// target and model, and slo where the series has one.
	PerTarget Scope = iota
	// PerDaemon panels show the daemons themselves: node and instance.
	PerDaemon
	// Fleet panels show aggregates across nodes: model, and slo where
	// the series has one.
	Fleet
)

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

// Queries lists every PromQL expression of the dashboard's panels.
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

// Variables are the names of the dashboard's template variables, in
// order.
func (d Dashboard) Variables() []string {
	var out []string
	for _, v := range d.vars {
		out = append(out, v["name"].(string))
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

// Dashboard filters. Every variable has "All" = ".*", which also matches
// a label a series does not have: a statically configured target has no
// namespace label, a target's own series (llm_up, llm_failure_mode,
// llm_signal_*) no model, and both are shown under "All".
//
// fDaemon: the daemon's own series.
func (c Config) fDaemon(extra ...string) string {
	return strings.Join(append(append(c.fCluster(), c.NodeLabel+`=~"$node"`, `instance=~"$instance"`), extra...), ", ")
}

// fCluster is the selector and the $cluster filter every query starts
// with.
func (c Config) fCluster() []string {
	f := []string{c.Selector}
	if c.ClusterLabel != "" {
		f = append(f, c.ClusterLabel+`=~"$cluster"`)
	}
	return f
}

// fFleet filters the per-cluster fleet aggregates (model_*:…), which
// carry no daemon labels, not even job: $cluster and $model.
func (c Config) fFleet(extra ...string) string {
	var f []string
	if c.ClusterLabel != "" {
		f = append(f, c.ClusterLabel+`=~"$cluster"`)
	}
	return strings.Join(append(append(f, `model=~"$model"`), extra...), ", ")
}

// statCount counts the series of q per cluster, and reads 0 where there
// are none: "or on () vector(0)" adds the 0 only when no cluster has
// one, where a plain "or vector(0)" would add it next to every count.
func (c Config) statCount(q string) string {
	by := ""
	if c.ClusterLabel != "" {
		by = " by (" + c.ClusterLabel + ")"
	}
	return "count" + by + " (" + q + ") or on () vector(0)"
}

// fTarget: series that carry the target's labels (namespace and pod when
// Kubernetes discovery found it) but no model.
func (c Config) fTarget(extra ...string) string {
	return c.fDaemon(append([]string{`target=~"$target"`, `namespace=~"$namespace"`}, extra...)...)
}

// fModel: the engine's series, which carry model too.
func (c Config) fModel(extra ...string) string {
	return c.fTarget(append([]string{`model=~"$model"`}, extra...)...)
}

// fRecorded: per-target series that may lack the target's namespace
// label (the recorded ones; GPU attribution's, whose namespace is the
// attributed pod's), so they are joined on selected() as well.
func (c Config) fRecorded(extra ...string) string {
	return c.fDaemon(append([]string{`target=~"$target"`}, extra...)...)
}

// selected is the targets the variables select, one series per target
// (the daemon labels and target): those in $namespace that serve a model
// of $model. A target serving no model (down, or before its first
// request) counts only under "All" models, through llm_up, which has no
// model label.
func (c Config) selected() string {
	on := c.by("target")
	return fmt.Sprintf("  group by (%[1]s) (%[2]s)\nor\n  group by (%[1]s) (%[3]s)",
		on, "llm_up{"+c.fTarget(`model=~"$model"`)+"}", "llm_generation_tokens_total{"+c.fModel()+"}")
}

// indent indents every line of s but the first by n spaces.
func indent(s string, n int) string {
	return strings.ReplaceAll(s, "\n", "\n"+strings.Repeat(" ", n))
}

// inSelected keeps the series of q (per target) of the selected targets.
func (c Config) inSelected(q string) string {
	return q + "\nand on (" + c.by("target") + ")\n  (\n    " + indent(c.selected(), 4) + "\n  )"
}

// gpuSelected is llm_gpu_info of the GPUs of the selected targets, and
// under "All" of the GPUs attributed to no target.
func (c Config) gpuSelected() string {
	return fmt.Sprintf("(\n    %s\n  and on (%s)\n    (\n      %s\n    )\nor\n  %s\n)",
		"llm_gpu_info{"+c.fDaemon(`target=~"$target"`)+"}", c.by("target"), indent(c.selected(), 6),
		"llm_gpu_info{"+c.fDaemon(`target=""`, `target=~"$target"`, `namespace=~"$namespace"`, `model=~"$model"`)+"}")
}

// onGPUs keeps the per-GPU series m of the selected targets' GPUs.
func (c Config) onGPUs(m string, extra ...string) string {
	return m + "{" + c.fDaemon(extra...) + "}\nand on (" + c.by("gpu", "uuid") + ")\n  " + indent(c.gpuSelected(), 2)
}

// legend names a target: two nodes may run targets of the same name.
const legendTarget = "{{instance}} {{target}}"

func (c Config) variables(names ...string) []map[string]any {
	ds := map[string]any{"type": "prometheus", "uid": "${datasource}"}
	q := func(name, label, query, desc string) map[string]any {
		return map[string]any{"name": name, "type": "query", "datasource": ds, "label": label, "description": desc,
			"query": query, "definition": query, "refresh": 2, "multi": true, "includeAll": true, "allValue": ".*",
			"sort": 1, "current": map[string]any{"text": "All", "value": "$__all"}}
	}
	cl := strings.Join(c.fCluster(), ", ")
	all := map[string]map[string]any{
		"cluster": q("cluster", "Cluster", fmt.Sprintf("label_values(up{%s}, %s)", c.Selector, c.ClusterLabel),
			"The cluster (the "+c.ClusterLabel+" external label of each Prometheus under Thanos Query); a single Prometheus without one shows All only"),
		"node": q("node", "Node", fmt.Sprintf("label_values(up{%s}, %s)", cl, c.NodeLabel),
			"The node's name, as the scrape configuration sets it"),
		"instance": q("instance", "Daemon", fmt.Sprintf(`label_values(up{%s, %s=~"$node"}, instance)`, cl, c.NodeLabel),
			"One goodput-exporter (one per node)"),
		"namespace": q("namespace", "Namespace", fmt.Sprintf(`label_values(llm_up{%s}, namespace)`, c.fDaemon()),
			"Namespace of the engine pods Kubernetes discovery found; statically configured targets have none and show under All only"),
		"target": q("target", "Target", fmt.Sprintf(`label_values(llm_up{%s}, target)`, c.fDaemon(`namespace=~"$namespace"`)),
			"An engine target of the daemons"),
		"model": q("model", "Model", fmt.Sprintf(`label_values(llm_generation_tokens_total{%s}, model)`, c.fTarget()),
			"Served model; a target serving none shows under All only"),
		"slo": q("slo", "SLO", fmt.Sprintf(`label_values(llm_slo_target_ratio{%s}, slo)`, c.fDaemon()), "SLO name"),
	}
	out := []map[string]any{{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"}}
	if c.ClusterLabel != "" {
		names = append([]string{"cluster"}, names...)
	}
	for _, n := range names {
		out = append(out, all[n])
	}
	return out
}

// Dashboards are the generated dashboards, in file order.
func (c Config) Dashboards() []Dashboard {
	ds := []Dashboard{c.overview(), c.failureModes(), c.gpuEnergy()}
	if c.ClusterLabel != "" {
		ds[0].Rows = append(ds[0].Rows, c.clusterRow())
	}
	for _, d := range ds {
		for _, r := range d.Rows {
			for i := range r.Panels {
				if !r.Panels[i].Stat {
					r.Panels[i].NoValue = c.noValue(r.Panels[i])
				}
			}
		}
	}
	return ds
}

// byTarget is "sum by (instance, job, node, target) (…)" and the like.
func (c Config) byTarget(agg, q string) string {
	return agg + " by (" + c.by("target") + ") (" + q + ")"
}

// shareOf is part over whole, 0 (not "no data") where the whole exists
// but the part's label value does not: an engine that has the family but
// never reported, e.g., finished_reason="error" has none in error.
// part and whole must be aggregated by the same labels.
func shareOf(part, whole string) string {
	return "(\n  " + part + "\n  or\n  0 * " + whole + "\n)\n  / (" + whole + " > 0)"
}

func (c Config) overview() Dashboard {
	M := c.fModel()
	R := c.fRecorded(`model=~"$model"`, `slo=~"$slo"`)
	fleet := c.fFleet(`slo=~"$slo"`)
	var burn []Target
	for _, w := range []string{"1h", "6h", "1d", "3d"} {
		burn = append(burn, Target{c.inSelected(sloBurn(w) + "{" + R + "}"), legendTarget + " {{slo}}/{{objective}} " + w})
	}
	budget := c.inSelected(fmt.Sprintf(`(
  1 - (
    1 - sum_over_time(%[1]s{%[3]s, outcome="good"}[%[4]s])
      / ignoring (outcome)
        (sum_over_time(%[1]s{%[3]s, outcome="judged"}[%[4]s]) > 0)
  )
    / on (%[5]s) group_left ()
      (1 - %[6]s)
)`, tileOutcome("1h"), "", R, c.BudgetPeriod, c.by("slo", "objective"),
		"llm_slo_target_ratio{"+c.fDaemon(`slo=~"$slo"`)+"}"))
	rate := func(m string) string { return c.byTarget("sum", "rate("+m+"{"+M+"}[5m])") }
	p99 := func(m string) string {
		return "histogram_quantile(0.99, sum by (" + c.by("target", "le") + ") (rate(" + m + "_bucket{" + M + "}[5m])))"
	}
	return Dashboard{UID: "goodput-overview", Title: "goodput-exporter / SLOs and goodput",
		vars: c.variables("node", "instance", "namespace", "target", "model", "slo"),
		Rows: []Row{
			{"Now", []Panel{
				{Title: "Targets down", Unit: "short", Stat: true,
					Description: "Engine targets whose last scrape failed (llm_up == 0).",
					Exprs:       []Target{{c.statCount("\n  " + c.inSelected("llm_up{"+c.fTarget()+"} == 0") + "\n"), "down"}}},
				{Title: "Error-budget burn alerts firing", Unit: "short", Stat: true,
					Exprs: []Target{{c.statCount("\n  " + c.inSelected(`ALERTS{alertname=~"LLMErrorBudgetBurn.*", alertstate="firing", `+R+`}`) + "\n"), "firing"}}},
				{Title: "Objectives the engine cannot measure", Unit: "short", Stat: true,
					Description: "SLO objectives with llm_slo_supported == 0: never judged, so never alerted on.",
					Exprs:       []Target{{c.statCount("llm_slo_supported{" + c.fModel(`slo=~"$slo"`) + "} == 0"), "unmeasurable"}}},
			}},
			{"SLO attainment and error budget", []Panel{
				{Title: "Attainment per objective (5m and 1h)", Unit: "percentunit",
					Description: "Share of judged requests that met the objective of their own node's SLO; no line while nothing is judged.",
					Exprs: []Target{{c.inSelected(sloAttainment("5m") + "{" + R + "}"), legendTarget + " {{model}} {{slo}}/{{objective}} 5m"},
						{c.inSelected(sloAttainment("1h") + "{" + R + "}"), legendTarget + " {{model}} {{slo}}/{{objective}} 1h"}}},
				{Title: "Error-budget burn rate", Unit: "short",
					Description: "(1 - attainment) / (1 - target) over 1h, 6h, 1d and 3d: 1 spends the budget exactly over the " + c.BudgetPeriod + " period; pages at " + ftoa(c.BurnAlerts[0].Factor) + "× over 1h.",
					Exprs:       burn},
				{Title: "Error budget left (" + c.BudgetPeriod + ")", Unit: "percentunit",
					Description: "1 - the burn rate over the last " + c.BudgetPeriod + " (from the hourly tiles; hours without judged requests left out). Negative: the budget is overspent.",
					Exprs:       []Target{{budget, legendTarget + " {{slo}}/{{objective}}"}}},
				{Title: "Fleet attainment per model (5m)", Unit: "percentunit", Scope: Fleet,
					Description: "Across every node (node, daemon, namespace and target do not apply): good over judged requests, each judged against its own node's objective.",
					Exprs:       []Target{{"model_slo_objective:llm_slo_attainment:ratio_rate5m{" + fleet + "}", "{{model}} {{slo}}/{{objective}}"}}},
			}},
			{"Goodput", []Panel{
				{Title: "Good tokens per second against all tokens", Unit: "short",
					Description: "Output tokens of the requests that finished in the last 5m and met every objective of the SLO, per second: lower and upper bounds from the window's output-length histogram and request bounds, which hold give or take the tokens of the requests in flight at the window's two ends (docs/accuracy.md); an estimate where llm_goodput_tokens_bounded is 0. Against every generated token.",
					Exprs: []Target{{c.inSelected(levelBound + ":llm_goodput_tokens:rate5m{" + R + "}"), legendTarget + " {{slo}} {{bound}}"},
						{rate("llm_generation_tokens_total"), legendTarget + " all tokens"}}},
				{Title: "Good requests per second", Unit: "reqps",
					Description: "Requests that finished in the last 5m and met every objective of the SLO: lower and upper bounds from the window's totals per objective, per second. The truth lies within them give or take the requests in flight at the window's two ends (edge, per second; docs/accuracy.md).",
					Exprs: []Target{{c.inSelected(boundRequests("5m") + "{" + R + "} / 300"), legendTarget + " {{slo}} {{bound}}"},
						{c.inSelected(inFlightEdges("5m") + "{" + c.fRecorded(`model=~"$model"`) + "} / 300"), legendTarget + " {{model}} edge"}}},
				{Title: "Fleet goodput per model", Unit: "short", Scope: Fleet,
					Description: "Across every node (node, daemon, namespace and target do not apply).",
					Exprs: []Target{{"model_slo_bound:llm_goodput_tokens:rate5m{" + fleet + "}", "{{model}} {{slo}} {{bound}}"},
						{"model:llm_generation_tokens:rate5m{" + c.fFleet() + "}", "{{model}} all tokens"}}},
				{Title: "Cost per million good tokens", Unit: "short",
					Description: "Hourly cost of the engine's GPUs over its good tokens; the lower goodput bound gives the higher cost.",
					Exprs:       []Target{{c.inSelected("target_slo_bound:llm_cost_per_million_good_tokens:ratio_rate5m{" + c.fRecorded(`slo=~"$slo"`) + "}"), legendTarget + " {{slo}} {{bound}} ({{currency}})"}}},
			}},
			{"Engine pressure", []Panel{
				{Title: "Queue and running batch", Unit: "short",
					Exprs: []Target{{c.byTarget("sum", "llm_requests_waiting{"+M+"}"), legendTarget + " waiting"},
						{c.byTarget("sum", "llm_requests_running{"+M+"}"), legendTarget + " running"}}},
				{Title: "KV-cache usage", Unit: "percentunit",
					Exprs: []Target{{c.byTarget("max", "llm_kv_cache_usage_ratio{"+M+"}"), legendTarget}}},
				{Title: "Preemptions per second", Unit: "short",
					Exprs: []Target{{rate("llm_preemptions_total"), legendTarget}}},
				{Title: "Prefix-cache hit ratio", Unit: "percentunit",
					Exprs: []Target{{rate("llm_prefix_cache_hits_total") + "\n  / (" + rate("llm_prefix_cache_queries_total") + " > 0)", legendTarget}}},
				{Title: "TTFT p99", Unit: "s",
					Exprs: []Target{{p99("llm_time_to_first_token_seconds"), legendTarget}}},
				{Title: "Inter-token latency p99", Unit: "s",
					Exprs: []Target{{p99("llm_inter_token_latency_seconds"), legendTarget}}},
			}},
		}}
}

// signalRange is the range of the rates a failure-mode row computes for
// the classifier's window (1m by default): 2m holds enough scrapes for
// rate() at the usual 15 s to 30 s scrape intervals.
const signalRange = "2m"

func (c Config) failureModes() Dashboard {
	th := diagnosis.DefaultThresholds()
	at := func(x float64) *float64 { return &x }
	M, T := c.fModel(), c.fTarget()
	sum := func(m string) string { return c.byTarget("sum", m+"{"+M+"}") }
	rate := func(m string, extra ...string) string {
		return c.byTarget("sum", "rate("+m+"{"+c.fModel(extra...)+"}["+signalRange+"])")
	}
	p99 := func(m string) string {
		return "histogram_quantile(0.99, sum by (" + c.by("target", "le") + ") (rate(" + m + "_bucket{" + M + "}[5m])))"
	}
	// sig is a classifier's gauge, one per target.
	sig := func(name string) string { return c.byTarget("max", "llm_signal_"+name+"{"+T+"}") }
	over := func(a, b string) string { return a + "\n  / on (" + c.by("target") + ")\n  (" + b + " > 0)" }
	kv := Panel{Title: "KV-cache usage", Unit: "percentunit", Threshold: at(th.KVHigh),
		Exprs: []Target{{c.byTarget("max", "llm_kv_cache_usage_ratio{"+M+"}"), legendTarget}}}
	preempt := Panel{Title: "Preemptions per second", Unit: "short", Threshold: at(th.PreemptionRate),
		Exprs: []Target{{rate("llm_preemptions_total"), legendTarget}}}
	// The queue's bars scale with the requests served (or the batch):
	// the classifier's own bar is drawn beside the signal, not a fixed
	// dashed line.
	slope := Panel{Title: "Waiting queue growth", Unit: "reqps",
		Exprs: []Target{{c.inSelected(sig("waiting_slope")), legendTarget},
			{c.inSelected(sig("waiting_slope_threshold")), legendTarget + " bar"}}}
	waiting := Panel{Title: "Waiting requests", Unit: "short",
		Exprs: []Target{{sum("llm_requests_waiting"), legendTarget},
			{c.inSelected(sig("waiting_threshold")), legendTarget + " bar"}}}
	ceiling := Panel{Title: "Running batch over its observed ceiling", Unit: "percentunit", Threshold: at(th.CeilingShare),
		Exprs: []Target{{over(sum("llm_requests_running"), sig("running_ceiling")), legendTarget}}}
	prompt := Panel{Title: "Prompt tokens per request over the baseline", Unit: "short", Threshold: at(th.PromptJump),
		Exprs: []Target{{c.inSelected(over(sig("prompt_tokens_per_request"), sig("prompt_tokens_per_request_baseline"))), legendTarget}}}
	hitRatio := "(\n    " + rate("llm_prefix_cache_hits_total") + "\n      / (" + rate("llm_prefix_cache_queries_total") + " > 0)\n  or\n    " +
		c.byTarget("max", "llm_prefix_cache_hit_ratio{"+M+"}") + "\n  )"
	itlMean := "(\n    " + rate("llm_inter_token_latency_seconds_sum") + "\n      / (" + rate("llm_inter_token_latency_seconds_count") + " > 0)\n  )"
	gpuClock := c.onGPUs("llm_gpu_sm_clock_hertz") + "\n  / on (" + c.by("gpu", "uuid") + ") llm_gpu_sm_clock_max_hertz{" + c.fDaemon() + "}"
	throttled := Panel{Title: "Throttle reasons active", Unit: "short",
		Description: "1 per GPU and clock-event reason (gpu_idle left out); the classifier counts thermal, hardware and power-brake slowdowns.",
		Exprs:       []Target{{c.onGPUs("llm_gpu_throttled", `reason!="gpu_idle"`) + " == 1", "{{instance}} gpu {{gpu}} {{reason}}"}}}

	desc := func(s string, a ...any) string {
		return fmt.Sprintf(s+" (the classifier's default threshold is the dashed line).", a...)
	}
	with := func(p Panel, d string, a ...any) Panel { p.Description = desc(d, a...); return p }
	bars := func(p Panel, d string, a ...any) Panel { p.Description = fmt.Sprintf(d+".", a...); return p }
	signals := map[string][]Panel{
		"queue_growth": {
			bars(slope, "llm_signal_waiting_slope: the least-squares growth of the waiting queue over the window; the mode needs at least llm_signal_waiting_slope_threshold, the bar line (%g requests/s, or more for an engine serving many requests a second or running a large batch)", th.QueueSlope),
			bars(waiting, "with at least llm_signal_waiting_threshold requests waiting on average, the bar line (%g, or more as above)", th.QueueMinWaiting),
			with(ceiling, "the running batch over llm_signal_running_ceiling, the largest batch seen over the baseline and window; the mode needs it at %g or more", th.CeilingShare),
			with(kv, "and the KV cache under %g: a full cache makes it a KV mode", th.KVHigh)},
		"kv_preemption": {
			with(kv, "The mode needs the KV cache at %g or more", th.KVHigh),
			with(preempt, "and at least %g preemptions per second", th.PreemptionRate),
			{Title: "Inter-token latency p99", Unit: "s", Description: "The consequence: recomputed requests slow every step.",
				Exprs: []Target{{p99("llm_inter_token_latency_seconds"), legendTarget}}}},
		"prefill_interference": {
			with(prompt, "llm_signal_prompt_tokens_per_request over its baseline (llm_signal_prompt_tokens_per_request_baseline); the mode needs %g× or more", th.PromptJump),
			{Title: "Mean inter-token latency over the baseline", Unit: "short", Threshold: at(th.DecodeJump),
				Description: desc("Mean inter-token latency over the last "+signalRange+" over llm_signal_inter_token_latency_mean_seconds_baseline; the mode needs %g× or more", th.DecodeJump),
				Exprs:       []Target{{c.inSelected(over(itlMean, sig("inter_token_latency_mean_seconds_baseline"))), legendTarget}}},
			bars(slope, "while the queue does not grow (under llm_signal_waiting_slope_threshold, the bar line, or fewer than llm_signal_waiting_threshold waiting)")},
		"kv_monopoly": {
			with(kv, "The mode needs the KV cache at %g or more", th.KVHigh),
			with(ceiling, "with at most %g of the observed batch ceiling running (llm_signal_running_ceiling) …", th.MonopolyRunningShare),
			{Title: "KV cache per running request over the baseline", Unit: "short", Threshold: at(th.MonopolyKVJump),
				Description: desc("… or each running request holding %g× the baseline's share of the cache or more (llm_signal_kv_cache_per_running_request over its _baseline)", th.MonopolyKVJump),
				Exprs:       []Target{{c.inSelected(over(sig("kv_cache_per_running_request"), sig("kv_cache_per_running_request_baseline"))), legendTarget}}},
			{Title: "Waiting requests", Unit: "short", Threshold: at(1), Description: desc("At least one request waiting"),
				Exprs: []Target{{sum("llm_requests_waiting"), legendTarget}}},
			with(preempt, "and under %g preemptions per second (with them it is kv_preemption)", th.PreemptionRate)},
		"prefix_cache_collapse": {
			{Title: "Prefix-cache hit ratio over the baseline", Unit: "percentunit", Threshold: at(th.HitRatioFall),
				Description: desc("Hit tokens over queried tokens (or the engine's hit-ratio gauge) over the last "+signalRange+", over llm_signal_prefix_cache_hit_ratio_baseline; the mode needs %g of the baseline or less", th.HitRatioFall),
				Exprs:       []Target{{c.inSelected(over(hitRatio, sig("prefix_cache_hit_ratio_baseline"))), legendTarget}}},
			{Title: "Baseline prefix-cache hit ratio", Unit: "percentunit", Threshold: at(th.MinBaselineHitRatio),
				Description: desc("llm_signal_prefix_cache_hit_ratio_baseline: the mode needs a baseline of %g or more (a cache that did little has little to lose)", th.MinBaselineHitRatio),
				Exprs:       []Target{{c.inSelected(sig("prefix_cache_hit_ratio_baseline")), legendTarget}}},
			with(prompt, "with prompts under %g× the baseline's length: longer prompts lower the ratio by their own weight", th.PromptJump),
			{Title: "TTFT p99", Unit: "s", Description: "The consequence: prompts are computed again.",
				Exprs: []Target{{p99("llm_time_to_first_token_seconds"), legendTarget}}}},
		"decode_saturation": {
			{Title: "Decode attainment", Unit: "percentunit", Threshold: at(th.DecodeTarget),
				Description: desc("llm_signal_decode_attainment_ratio: the share of requests within the decode (TPOT) objective over the window; the mode needs it under the objective's target (%g at %g ms by default, or the SLO's tpot objective). Engines with per-token data only have no line: there the mean inter-token latency at %g of the threshold counts", th.DecodeTarget, 1000*th.DecodeLatency, th.DecodeMeanShare),
				Exprs:       []Target{{c.inSelected(sig("decode_attainment_ratio")), legendTarget}}},
			{Title: "Mean inter-token latency over the baseline", Unit: "short", Threshold: at(th.SaturationJump),
				Description: desc("Mean inter-token latency over the last "+signalRange+" over llm_signal_inter_token_latency_mean_seconds_baseline: a breach counts with steps %g× the baseline's or slower (a batch grown too large), not with a model's usual slow steps", th.SaturationJump),
				Exprs:       []Target{{c.inSelected(over(itlMean, sig("inter_token_latency_mean_seconds_baseline"))), legendTarget}}},
			{Title: "Waiting per running request", Unit: "short", Threshold: at(th.FlatQueueShare),
				Description: desc("A flat queue: at most %g waiting per running request (or none), not growing", th.FlatQueueShare),
				Exprs:       []Target{{sum("llm_requests_waiting") + "\n  / on (" + c.by("target") + ")\n  (" + sum("llm_requests_running") + " > 0)", legendTarget}}},
			{Title: "Inter-token latency and TTFT p99", Unit: "s",
				Description: fmt.Sprintf("The decode tail breaks while TTFT holds (at least %g of requests within the TTFT objective).", th.TTFTHold),
				Exprs:       []Target{{p99("llm_inter_token_latency_seconds"), legendTarget + " ITL"}, {p99("llm_time_to_first_token_seconds"), legendTarget + " TTFT"}}},
			with(preempt, "and under %g preemptions per second", th.PreemptionRate)},
		"gpu_throttling": {
			{Title: "Share of GPU readings slowed down", Unit: "percentunit", Threshold: at(th.ThrottleShare),
				Description: desc("llm_signal_gpu_throttled_ratio: the share of the window's readings with a thermal, hardware or power-brake slowdown on any of the target's GPUs; the mode needs %g or more …", th.ThrottleShare),
				Exprs:       []Target{{c.inSelected(sig("gpu_throttled_ratio")), legendTarget}}},
			{Title: "SM clock over its maximum", Unit: "percentunit", Threshold: at(th.ClockRatio),
				Description: desc("… or the lowest SM clock of the target's GPUs under %g of its maximum while requests run; llm_signal_gpu_sm_clock_ratio_baseline is the baseline's", th.ClockRatio),
				Exprs: []Target{{gpuClock, "{{instance}} gpu {{gpu}}"},
					{c.inSelected(sig("gpu_sm_clock_ratio_baseline")), legendTarget + " baseline"}}},
			throttled},
		"engine_stall": {
			{Title: "Engine up", Unit: "short", Threshold: at(1 - th.DownShare),
				Description: desc("llm_up: the mode is raised when %g of the window's scrapes fail and none has answered for %g s …", th.DownShare, th.StallSilence),
				Exprs:       []Target{{c.inSelected("llm_up{" + T + "}"), legendTarget}}},
			{Title: "Generation tokens per second", Unit: "short",
				Description: "… or when no token comes out while requests are in flight; llm_signal_generation_tokens_per_second_baseline is the baseline's rate.",
				Exprs: []Target{{rate("llm_generation_tokens_total"), legendTarget},
					{c.inSelected(sig("generation_tokens_per_second_baseline")), legendTarget + " baseline"}}},
			{Title: "Requests in flight", Unit: "short", Threshold: at(1),
				Description: desc("Waiting plus running"),
				Exprs:       []Target{{c.byTarget("sum", `{__name__=~"llm_requests_waiting|llm_requests_running", `+M+"}"), legendTarget}}},
			{Title: "Share of finished requests in error", Unit: "percentunit", Threshold: at(th.ErrorRatio),
				Description: desc("… or when %g or more of at least %g requests finished in the window end in an error", th.ErrorRatio, th.MinFinished),
				Exprs:       []Target{{shareOf(rate("llm_requests_finished_total", `reason="error"`), rate("llm_requests_finished_total")), legendTarget}}}},
	}
	var rows []Row
	for _, mode := range FailureModes {
		verdict := c.inSelected(c.byTarget("max", `llm_failure_mode{`+c.fTarget(`mode="`+mode+`"`)+`}`))
		panels := []Panel{
			{Title: "Verdict: " + mode, Unit: "short",
				Description: fmt.Sprintf("llm_failure_mode{mode=%q}: 1 while the classifier names the mode (raised after %s, each over the trailing %s, cleared after %d clean ones); "+
					"no line where the target cannot be judged for it (llm_failure_mode_supported = 0). The panels to the right are the signals the rule reads.",
					mode, c.raisedAfter(mode), promDuration(c.DiagnosisWindow), c.DiagnosisLeave),
				Exprs: []Target{{verdict, legendTarget}}},
			{Title: "Targets in " + mode + " now", Unit: "short", Stat: true,
				Exprs: []Target{{c.statCount("\n  " + c.inSelected(`llm_failure_mode{`+c.fTarget(`mode="`+mode+`"`)+`} == 1`) + "\n"), "targets"}}},
		}
		rows = append(rows, Row{mode, append(panels, signals[mode]...)})
	}
	return Dashboard{UID: "goodput-failure-modes", Title: "goodput-exporter / failure modes",
		vars: c.variables("node", "instance", "namespace", "target", "model"), Rows: rows}
}

func (c Config) gpuEnergy() Dashboard {
	perTarget := func(agg, m string, extra ...string) string {
		return c.inSelected(c.byTarget(agg, m+"{"+c.fRecorded(extra...)+"}"))
	}
	return Dashboard{UID: "goodput-gpu-energy", Title: "goodput-exporter / GPU energy and cost",
		vars: c.variables("node", "instance", "namespace", "target", "model", "slo"),
		Rows: []Row{
			{"Power and energy", []Panel{
				{Title: "GPU backends down", Unit: "short", Stat: true, Scope: PerDaemon,
					Description: "Daemons that cannot read their GPUs (goodput_exporter_gpu_backend_up == 0); absent with --gpu.backend none.",
					Exprs:       []Target{{c.statCount("goodput_exporter_gpu_backend_up{" + c.fDaemon() + "} == 0"), "down"}}},
				{Title: "Engine GPU power", Unit: "watt",
					Description: "Board power of the GPUs attributed to each target, a shared GPU weighted by the target's token share.",
					Exprs:       []Target{{perTarget("sum", "llm_engine_gpu_power_watts"), legendTarget}}},
				{Title: "GPU board power", Unit: "watt",
					Description: "Per GPU of the selected targets; under All, the GPUs attributed to no target too.",
					Exprs: []Target{{c.onGPUs("llm_gpu_power_watts"), "{{instance}} gpu {{gpu}}"},
						{c.onGPUs("llm_gpu_power_limit_watts"), "{{instance}} gpu {{gpu}} limit"}}},
				{Title: "Engine energy per hour", Unit: "joule",
					Exprs: []Target{{c.inSelected(c.byTarget("sum", "increase(llm_engine_gpu_energy_joules_total{"+c.fRecorded()+"}[1h])")), legendTarget}}},
			}},
			{"Per token", []Panel{
				{Title: "Joules per generated token", Unit: "short",
					Exprs: []Target{{c.inSelected("target:llm_engine_gpu_energy_joules_per_token:ratio_rate5m{" + c.fRecorded() + "}"), legendTarget}}},
				{Title: "Joules per good token", Unit: "short",
					Description: "Energy over good tokens; bound=\"lower\" divides by the lower goodput bound, so it is the higher figure.",
					Exprs:       []Target{{c.inSelected("target_slo_bound:llm_engine_gpu_energy_joules_per_good_token:ratio_rate5m{" + c.fRecorded(`slo=~"$slo"`) + "}"), legendTarget + " {{slo}} {{bound}}"}}},
				{Title: "Cost per million good tokens", Unit: "short",
					Exprs: []Target{{c.inSelected("target_slo_bound:llm_cost_per_million_good_tokens:ratio_rate5m{" + c.fRecorded(`slo=~"$slo"`) + "}"), legendTarget + " {{slo}} {{bound}} ({{currency}})"}}},
				{Title: "Hourly cost of the engines' GPUs", Unit: "short",
					Exprs: []Target{{c.inSelected("llm_engine_hourly_cost{" + c.fTarget() + "}"), legendTarget + " ({{currency}}, {{basis}})"}}},
			}},
			{"Clocks and throttling", []Panel{
				{Title: "SM clock against its maximum", Unit: "percentunit",
					Exprs: []Target{{c.onGPUs("llm_gpu_sm_clock_hertz") + "\n  / on (" + c.by("gpu", "uuid") + ") llm_gpu_sm_clock_max_hertz{" + c.fDaemon() + "}", "{{instance}} gpu {{gpu}}"}}},
				{Title: "Throttle reasons active", Unit: "short",
					Exprs: []Target{{c.onGPUs("llm_gpu_throttled", `reason!="gpu_idle"`) + " == 1", "{{instance}} gpu {{gpu}} {{reason}}"}}},
				{Title: "GPU utilisation", Unit: "percentunit",
					Exprs: []Target{{c.onGPUs("llm_gpu_utilization_ratio"), "{{instance}} gpu {{gpu}}"}}},
				{Title: "Energy readings not used as they came", Unit: "short",
					Exprs: []Target{{"sum by (" + c.by("gpu", "uuid", "reason") + ") (increase(goodput_exporter_gpu_energy_glitches_total{" + c.fDaemon() + "}[1h]))\n  and on (" + c.by("gpu", "uuid") + ")\n  " + c.gpuSelected(), "{{instance}} gpu {{gpu}} {{reason}}"}}},
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
			if p.Threshold != nil {
				defaults["thresholds"] = map[string]any{"mode": "absolute", "steps": []map[string]any{
					{"color": "transparent", "value": nil}, {"color": "red", "value": *p.Threshold}}}
				defaults["custom"] = map[string]any{"thresholdsStyle": map[string]any{"mode": "dashed"}}
			}
			if p.NoValue != "" {
				defaults["noValue"] = p.NoValue
			}
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
