package mixin

import "fmt"

// Windows of the per-window goodput bounds: the 5m the overview's good
// requests panel shows.
var boundWindows = []string{"5m"}

func boundRequests(w string) string { return levelBound + ":llm_goodput_requests:window_increase" + w }
func inFlightEdges(w string) string { return "target_model:llm_requests_in_flight:edges" + w }

// windowBounds records, per window, the bounds on the requests that met
// every objective of an SLO among those that finished in the window,
// drawn from the window's totals (goodput.WindowBounds, docs/accuracy.md):
//
//	lower = Δjudged − Δfailed − Σ_k max(0, Δjudged − Δobjective_judged_k)
//	upper = min(Δjudged, min over objectives of Δobjective_good)
//
// and the requests in flight at the window's two ends, the edge by which
// the truth may lie outside them. A sum of per-interval bounds would not
// hold in a window whose objectives judged different requests.
func (c Config) windowBounds() Group {
	slo := c.by("target", "engine", "model", "slo")
	model := c.by("target", "engine", "model")
	g := Group{Name: "goodput-exporter.goodput-window-bounds", Interval: c.FastInterval}
	for _, w := range boundWindows {
		judged := fmt.Sprintf("sum by (%s) (increase(%s[%s]))", slo, c.sel("llm_goodput_judged_requests_total"), w)
		failed := fmt.Sprintf("sum by (%s) (increase(%s[%s]))", slo, c.sel("llm_goodput_failed_requests_total"), w)
		good := fmt.Sprintf("min by (%s) (increase(%s[%s]))", slo, c.sel("llm_goodput_objective_good_requests_total"), w)
		objJudged := fmt.Sprintf("increase(%s[%s])", c.sel("llm_goodput_objective_judged_requests_total"), w)
		// Finished requests an objective did not judge may have failed
		// it (TTFT of a request that never got a first token).
		unjudged := fmt.Sprintf("sum by (%s) (\n    clamp_min(\n      %s\n        - on (%s) group_right ()\n      %s,\n      0\n    )\n  )", slo, judged, slo, objJudged)
		lower := rec(boundRequests(w), fmt.Sprintf("clamp_min(\n  %s\n    - on (%s)\n  %s\n    - on (%s)\n  %s,\n  0\n)", judged, slo, failed, slo, unjudged))
		lower.Labels = map[string]string{"bound": "lower"}
		// The least objective, unless more than finished: then finished.
		upper := rec(boundRequests(w), fmt.Sprintf("(\n  %s\n    < on (%s)\n  %s\n)\nor on (%s)\n  %s", good, slo, judged, slo, judged))
		upper.Labels = map[string]string{"bound": "upper"}
		now := fmt.Sprintf("sum by (%s) (%s + %s)", model, c.sel("llm_requests_running"), c.sel("llm_requests_waiting"))
		then := fmt.Sprintf("sum by (%s) (%s offset %s + %s offset %s)", model, c.sel("llm_requests_running"), w, c.sel("llm_requests_waiting"), w)
		// A model younger than the window had nothing in flight at its
		// start.
		edge := rec(inFlightEdges(w), fmt.Sprintf("%s\n  + on (%s)\n(\n  %s\n  or on (%s)\n  %s * 0\n)", now, model, then, model, now))
		g.Rules = append(g.Rules, lower, upper, edge)
	}
	return g
}
