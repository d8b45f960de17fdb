package mixin

import (
	"fmt"
	"strconv"
)

// Windows of the per-window goodput bounds: the 5m the overview's good
// requests panel shows.
var boundWindows = []string{"5m"}

func boundRequests(w string) string { return levelBound + ":llm_goodput_requests:window_increase" + w }
func inFlightEdges(w string) string { return "target_model:llm_requests_in_flight:edges" + w }
func measuredRequests(w string) string {
	return "target_model_slo:llm_goodput_output_length_requests:window_increase" + w
}
func measuredGood(w string) string {
	return levelBound + ":llm_goodput_output_length_good_requests:window_increase" + w
}
func boundTokens(w string) string { return levelBound + ":llm_goodput_tokens:window_increase" + w }

// windowSeconds is a window's length in seconds as the rules will run it
// (scaled by TimeScale like their range selectors), to turn a window's
// increase into a rate.
func (c Config) windowSeconds(w string) string {
	if c.TimeScale > 1 {
		w = c.scaleDuration(w)
	}
	return strconv.FormatFloat(parsePromDuration(w).Seconds(), 'g', -1, 64)
}

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
		g.Rules = append(g.Rules, c.windowTokenBounds(w)...)
	}
	return g
}

// windowTokenBounds records, per window, the bounds on the output tokens
// of the requests that met every objective among those that finished in
// it (goodput.WindowTokenBounds with no edge), drawn from the window's
// output-length histogram (llm_goodput_output_length_requests_total: C_j
// requests with at most b_j tokens, n in all, S tokens) and the window's
// request bounds recorded just before (rules of a group run in order):
//
//	lower = max(Low(L), S − High(n − L))
//	upper = min(High(U), S − Low(n − U))
//
// where Low(k) = Σ_j lower_j · max(0, k − C_j) is the fewest tokens k
// requests can have, and High(m) = top · m − Σ_j upper_j · max(0, C_j −
// (n − m)) the most m can have, unbounded when any request is past the
// last bound (llm_goodput_output_length_step_tokens holds the weights;
// goodput.OutputTotals.Steps). A window in which requests were judged
// without their lengths (the unmeasured counter rose, or the histogram
// counted fewer than were judged) has no token bounds.
func (c Config) windowTokenBounds(w string) []Rule {
	slo := c.by("target", "engine", "model", "slo")
	inc := func(metric string, matchers ...string) string {
		return fmt.Sprintf("increase(%s[%s])", c.sel(metric, matchers...), w)
	}
	sumInc := func(metric string, matchers ...string) string {
		return fmt.Sprintf("sum by (%s) (%s)", slo, inc(metric, matchers...))
	}
	judged := sumInc("llm_goodput_judged_requests_total")
	all := sumInc("llm_goodput_output_length_requests_total", `le_tokens="+Inf"`)
	// The requests the histogram counted, where every judged request's
	// length is known.
	n := rec(measuredRequests(w), fmt.Sprintf("%[2]s\n  unless on (%[1]s)\n(\n  %[2]s\n    < on (%[1]s)\n  %[3]s * 0.999999\n)\n  unless on (%[1]s)\n%[4]s > 0",
		slo, all, judged, sumInc("llm_goodput_output_length_unmeasured_requests_total")))
	nRec := measuredRequests(w)
	reqBound := func(b string) string {
		return fmt.Sprintf("sum by (%s) (%s{bound=%q})", slo, boundRequests(w), b)
	}
	// Of the requests the histogram counted, those that may have met
	// every objective: at least the window's lower bound; at most its
	// upper bound plus the requests the histogram counted beyond the
	// judged ones (they may be good), and at most all of them.
	goodLower := rec(measuredGood(w), fmt.Sprintf("%s\n  and on (%s)\n%s", reqBound("lower"), slo, nRec))
	goodLower.Labels = map[string]string{"bound": "lower"}
	goodUpper := rec(measuredGood(w), fmt.Sprintf(
		"min by (%[1]s) (\n  (\n    %[2]s\n      + on (%[1]s)\n    clamp_min(%[3]s - on (%[1]s) %[4]s, 0)\n  )\n  or\n  label_replace(%[3]s, \"term\", \"all\", \"\", \"\")\n)",
		slo, reqBound("upper"), nRec, judged))
	goodUpper.Labels = map[string]string{"bound": "upper"}
	C := inc("llm_goodput_output_length_requests_total", `le_tokens!="+Inf"`)
	step := func(side string) string {
		return c.sel("llm_goodput_output_length_step_tokens", `le_tokens!="+Inf"`, fmt.Sprintf("side=%q", side))
	}
	top := fmt.Sprintf("sum by (%s) (%s)", slo, c.sel("llm_goodput_output_length_step_tokens", `le_tokens="+Inf"`, `side="upper"`))
	S := sumInc("llm_goodput_output_length_tokens_total")
	k := func(b string) string { return fmt.Sprintf("sum by (%s) (%s{bound=%q})", slo, measuredGood(w), b) }
	// Low(k): the fewest tokens k requests can have.
	low := func(k string) string {
		return fmt.Sprintf("sum by (%[1]s) (\n  clamp_min(%[2]s - on (%[1]s) group_right () %[3]s, 0)\n    * on (%[1]s, le_tokens) group_left ()\n  %[4]s\n)",
			slo, k, C, step("lower"))
	}
	// High(n − r): the most tokens n − r requests can have,
	// top·(n − r) − Σ_j upper_j · max(0, C_j − r).
	highBut := func(r string) string {
		return fmt.Sprintf("(\n  %[2]s * on (%[1]s) (%[3]s - on (%[1]s) %[4]s)\n    - on (%[1]s)\n  sum by (%[1]s) (\n    clamp_min(%[5]s - on (%[1]s) group_left () %[4]s, 0)\n      * on (%[1]s, le_tokens) group_left ()\n    %[6]s\n  )\n)",
			slo, top, nRec, r, C, step("upper"))
	}
	// Requests past the last finite bound: High of any m > 0 is
	// unbounded, and the candidates that use it are left out.
	past := fmt.Sprintf("(%[2]s - on (%[1]s) max by (%[1]s) (%[3]s) > 0)", slo, nRec, C)
	cand := func(expr, name string) string {
		return fmt.Sprintf("label_replace(\n  %s,\n  \"term\", %q, \"\", \"\"\n)", indent(expr, 2), name)
	}
	// upper = min(High(U), S − Low(n − U), S), at least 0.
	nMinusU := fmt.Sprintf("(%s - on (%s) %s)", nRec, slo, k("upper"))
	highU := fmt.Sprintf("%s\n  unless on (%s)\n(%s and on (%s) %s > 0)", highBut(nMinusU), slo, past, slo, k("upper"))
	sMinusLow := fmt.Sprintf("%s\n  - on (%s)\n%s", S, slo, low(nMinusU))
	upper := rec(boundTokens(w), fmt.Sprintf("clamp_min(\n  min by (%s) (\n    %s\n    or\n    %s\n    or\n    %s\n  ),\n  0\n)",
		slo, indent(cand(highU, "high"), 4), indent(cand(sMinusLow, "low"), 4), indent(cand(S+" and on ("+slo+") "+nRec, "sum"), 4)))
	upper.Labels = map[string]string{"bound": "upper"}
	// lower = max(Low(L), S − High(n − L)), at least 0 and at most upper.
	lowL := low(k("lower"))
	sMinusHigh := fmt.Sprintf("(\n  %s\n    - on (%s)\n  %s\n)\n  unless on (%s)\n(%s and on (%s) (%s - on (%s) %s > 0))",
		S, slo, highBut(k("lower")), slo, past, slo, nRec, slo, k("lower"))
	lower := rec(boundTokens(w), fmt.Sprintf("clamp_min(\n  min by (%s) (\n    max by (%s) (\n      %s\n      or\n      %s\n    )\n    or\n    %s\n  ),\n  0\n)",
		slo, slo, indent(cand(lowL, "low"), 6), indent(cand(sMinusHigh, "high"), 6), indent(cand(fmt.Sprintf("sum by (%s) (%s{bound=\"upper\"})", slo, boundTokens(w)), "upper"), 4)))
	lower.Labels = map[string]string{"bound": "lower"}
	return []Rule{n, goodLower, goodUpper, upper, lower}
}
