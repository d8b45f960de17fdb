package mixin

import (
	"fmt"
	"strings"
)

// inCluster begins an alert's description with the cluster it fired in:
// the alert's own cluster label where the rule sees one (Thanos Ruler, or
// one Prometheus scraping several clusters), else the external label of
// the Prometheus that evaluates it; nothing where neither exists (one
// Prometheus without external labels), so that a single-cluster setup
// reads as before.
func (c Config) inCluster() string {
	if c.ClusterLabel == "" {
		return ""
	}
	return fmt.Sprintf("{{ with or $labels.%[1]s $externalLabels.%[1]s }}Cluster {{ . }}: {{ end }}", c.ClusterLabel)
}

// clusterRow is the overview's row per cluster: goodput, attainment, cost
// and failure modes, one line per cluster of $cluster, read through the
// global view (Thanos Query); on one Prometheus without a cluster label
// it shows one line, the whole fleet.
func (c Config) clusterRow() Row {
	cl := c.ClusterLabel
	fleet := c.fFleet(`slo=~"$slo"`)
	tokens := fmt.Sprintf("sum by (%s) (model_slo_bound:llm_goodput_tokens:rate5m{%s})", c.fleetBy("slo", "bound"), fleet)
	outcome := func(o string) string {
		return fmt.Sprintf("sum by (%s) (%s{%s, %s})", c.fleetBy("slo", "objective", "outcome"), sloOutcome("5m"), fleet, o)
	}
	return Row{Title: "Per cluster", Panels: []Panel{
		{Title: "Good tokens per second per cluster", Unit: "short", Scope: Fleet,
			Description: "Each cluster's goodput (lower and upper bounds), summed over its nodes and the selected models.",
			Exprs:       []Target{{tokens, "{{" + cl + "}} {{slo}} {{bound}}"}}},
		{Title: "Attainment per cluster (5m)", Unit: "percentunit", Scope: Fleet,
			Description: "Good over judged requests of the selected models in each cluster, each judged against its own node's objective.",
			Exprs:       []Target{{atMostOne(goodOverJudged(outcome)), "{{" + cl + "}} {{slo}}/{{objective}}"}}},
		{Title: "Cost per million good tokens per cluster", Unit: "short", Scope: Fleet,
			Description: "The hourly price of every target of the cluster over the good tokens of the selected models; bound=\"lower\" (the lower goodput bound) is the higher cost.",
			Exprs: []Target{{fmt.Sprintf("sum by (%s) (\n  max by (%s) (%s)\n) / 3600 * 1e6\n  / on (%s) group_right (currency)\n    (%s > 0)",
				c.fleetBy("currency"), c.by("target", "currency"), "llm_engine_hourly_cost{"+strings.Join(c.fCluster(), ", ")+"}", c.fleetBy(), tokens),
				"{{" + cl + "}} {{slo}} {{bound}} {{currency}}"}}},
		{Title: "Targets in each failure mode per cluster", Unit: "short", Scope: PerDaemon,
			Description: "Targets whose classifier verdict is the mode now, per cluster and mode.",
			Exprs:       []Target{{fmt.Sprintf("count by (%s) (llm_failure_mode{%s} == 1)", c.fleetBy("mode"), c.fDaemon()), "{{" + cl + "}} {{mode}}"}}},
	}}
}
