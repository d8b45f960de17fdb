package mixin

import (
	"fmt"
	"strings"
)

// GlobalRulesFile holds the global groups: rules that read every
// cluster's series through a global query layer (Thanos Ruler over
// Thanos Query, or any ruler over a global view), never loaded by a
// per-cluster Prometheus, which sees one cluster only.
const GlobalRulesFile = "rules/global/goodput.global.yml"

// Partial-response strategies of Thanos Ruler (docs/rules-and-dashboards.md,
// "On Thanos"): abort makes an evaluation fail while any store (one
// cluster's sidecar) does not answer; warn evaluates over the stores that
// answered.
const (
	PartialAbort = "abort"
	PartialWarn  = "warn"
)

// globalLevel begins the name of every rule that sums across clusters:
// the only rules whose aggregations may drop the cluster label.
const globalLevel = "global_"

// acrossClusters reports whether r is one of the global rules that sum
// across clusters on purpose.
func acrossClusters(r Rule) bool {
	return strings.HasPrefix(r.Record, globalLevel) || strings.HasPrefix(r.Alert, "LLMFleet")
}

// globalBy is the labels of an aggregate across clusters: FleetLabels,
// then extra.
func (c Config) globalBy(extra ...string) string {
	return strings.Join(append(append([]string{}, c.FleetLabels...), extra...), ", ")
}

// Names of the global rules.
const (
	globalGoodputRequests = "global_model_slo_bound:llm_goodput_requests:rate5m"
	globalGoodputTokens   = "global_model_slo_bound:llm_goodput_tokens:rate5m"
	clusterHourlyCost     = "cluster_currency:llm_engine_hourly_cost:sum"
	clusterCost           = "cluster_slo_bound:llm_cost_per_million_good_tokens:ratio_rate5m"
	globalCost            = "global_slo_bound:llm_cost_per_million_good_tokens:ratio_rate5m"
	globalOutcome         = "global_model_slo_objective_outcome:llm_slo_requests:rate5m"
	globalTarget          = "global_slo_objective:llm_slo_target_ratio:max"
)

func globalAttainment(w string) string {
	return "global_model_slo_objective:llm_slo_attainment:ratio_rate" + w
}
func globalBurn(w string) string {
	return "global_model_slo_objective:llm_slo_burn_rate:ratio_rate" + w
}

// FleetBurnAlert is the global alert: the fleet's error budget for one
// model burns as fast as the fastest page allows, over its long and its
// short window, summed over every cluster.
const FleetBurnAlert = "LLMFleetErrorBudgetBurn"

// GlobalGroups are the rules for Thanos Ruler (GlobalRulesFile). They
// read the per-cluster recorded series (a few per model and cluster),
// never the raw ones, except the targets' hourly cost and SLO target
// (one gauge per target, read at one instant).
func (c Config) GlobalGroups() []Group {
	cl := c.ClusterLabel
	fast := c.fastestBurn()
	goodput := Group{Name: "goodput-exporter.global-goodput", Interval: c.WindowInterval,
		// A total over the clusters that answered is a wrong number
		// that looks right: abort, and let the series go stale.
		PartialResponseStrategy: PartialAbort,
		Rules: []Rule{
			rec(globalGoodputRequests, fmt.Sprintf("sum by (%s) (model_slo_bound:llm_goodput_requests:rate5m)", c.globalBy("model", "slo", "bound"))),
			rec(globalGoodputTokens, fmt.Sprintf("sum by (%s) (model_slo_bound:llm_goodput_tokens:rate5m)", c.globalBy("model", "slo", "bound"))),
			// One hourly cost per target (max drops the basis label),
			// summed per cluster.
			rec(clusterHourlyCost, fmt.Sprintf("sum by (%s) (\n  max by (%s) (%s)\n)",
				c.fleetBy("currency"), c.by("target", "currency"), c.sel("llm_engine_hourly_cost"))),
			// bound="lower" divides by the lower goodput bound: the higher cost.
			rec(clusterCost, fmt.Sprintf("%s / 3600 * 1e6\n  / on (%s) group_right (currency)\n    (sum by (%s) (model_slo_bound:llm_goodput_tokens:rate5m) > 0)",
				clusterHourlyCost, c.fleetBy(), c.fleetBy("slo", "bound"))),
			rec(globalCost, fmt.Sprintf("sum by (%s) (%s) / 3600 * 1e6\n  / on (%s) group_right (currency)\n    (sum by (%s) (%s) > 0)",
				c.globalBy("currency"), clusterHourlyCost, c.globalBy(), c.globalBy("slo", "bound"), globalGoodputTokens)),
		}}
	burn := Group{Name: "goodput-exporter.global-burn", Interval: c.FastInterval,
		// A burn rate is a ratio: over the clusters that answered it is
		// still the attainment of the traffic seen, so a cluster whose
		// sidecar is down does not blind the fleet's alert (warn).
		PartialResponseStrategy: PartialWarn,
		Rules: []Rule{
			rec(globalOutcome, fmt.Sprintf("sum by (%s) (%s)", c.globalBy("model", "slo", "objective", "outcome"), sloOutcome("5m"))),
			rec(globalAttainment("5m"), atMostOne(goodOverJudged(func(o string) string { return globalOutcome + "{" + o + "}" }))),
			rec(globalAttainment(fast.Long), atMostOne(goodOverJudged(func(o string) string {
				return fmt.Sprintf("sum by (%s) (sum_over_time(%s{%s}[%s]))", c.globalBy("model", "slo", "objective", "outcome"), fleetTileOutcome, o, fast.Long)
			}))),
			// The strictest target any daemon sets for the objective.
			rec(globalTarget, fmt.Sprintf("max by (%s) (%s)", c.globalBy("slo", "objective"), c.sel("llm_slo_target_ratio"))),
		}}
	for _, w := range []string{fast.Short, fast.Long} {
		burn.Rules = append(burn.Rules, rec(globalBurn(w), fmt.Sprintf("(1 - %s)\n  / on (%s) group_left ()\n    (1 - %s)",
			globalAttainment(w), c.globalBy("slo", "objective"), globalTarget)))
	}
	f := ftoa(fast.Factor)
	burn.Rules = append(burn.Rules, c.alert(FleetBurnAlert,
		fmt.Sprintf("%s > %s\nand on (%s)\n  %s > %s", globalBurn(fast.Long), f, c.globalBy("model", "slo", "objective"), globalBurn(fast.Short), f),
		fast.For, c.TicketSeverity,
		fmt.Sprintf("SLO {{ $labels.slo }}/{{ $labels.objective }} of {{ $labels.model }} burns its %s error budget %s× too fast across every cluster.", c.BudgetPeriod, f),
		fmt.Sprintf("Across every %s, the error budget of objective {{ $labels.objective }} of SLO {{ $labels.slo }} for {{ $labels.model }} burned {{ $value | humanize }}× "+
			"the rate a %s budget allows over the last %s, and more than %s× over the last %s too, against the strictest target any daemon sets. "+
			"A burn of one target pages on its own (%s, which inhibits this ticket); this one says the fleet as a whole burns, e.g. a little on every cluster.",
			cl, c.BudgetPeriod, fast.Long, f, fast.Short, BurnAlertName(fast)),
		&Runbook{
			Meaning: "The fleet's attainment of the objective, summed over every cluster through the global query layer, burns the budget as fast as the fastest page. No single target pages (that would inhibit this alert): the loss is spread thin, or over targets too small to page on their own.",
			Confirm: []Query{
				{"Burn rate per cluster (through Thanos Query)", fmt.Sprintf("(1 - sum by (%[1]s, model, slo, objective) (%[2]s{outcome=\"good\", model=\"<model>\"}) / sum by (%[1]s, model, slo, objective) (%[2]s{outcome=\"judged\", model=\"<model>\"}))", cl, sloOutcome("5m"))},
				{"The targets that burn most", fmt.Sprintf("topk(10, %s{model=\"<model>\", slo=\"<slo>\", objective=\"<objective>\"})", sloBurn(fast.Long))},
			},
			Remedies: []string{
				"If one cluster carries the burn, follow its own alerts and dashboards (goodput-fleet, cluster variable).",
				"If every cluster burns a little, look for what they share: a model version, a traffic shift, a change of the SLO's objectives.",
			},
		}))
	return c.scaled([]Group{goodput, burn})
}

// globalInhibitRules: a target's own burn page names the burn at its
// source; the fleet ticket for the same objective says nothing more.
func (c Config) globalInhibitRules() []InhibitRule {
	return []InhibitRule{{
		Why: "A target's own burn page (" + BurnAlertName(c.fastestBurn()) + ") already names the burn at its source: the fleet's ticket " +
			"for the same model and objective, from Thanos Ruler, says nothing more while it fires.",
		Source: []string{fmt.Sprintf("alertname=%q", BurnAlertName(c.fastestBurn()))},
		Target: []string{fmt.Sprintf("alertname=%q", FleetBurnAlert)},
		Equal:  []string{"model", "slo", "objective"},
	}}
}
