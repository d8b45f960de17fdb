package mixin

import (
	"fmt"
	"strconv"
	"strings"
)

// Rule is one recording or alerting rule, in Prometheus' field order.
type Rule struct {
	Record      string            `yaml:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`

	// Runbook is what docs/runbooks/<Alert>.md says; alerts only.
	Runbook *Runbook `yaml:"-"`
}

// Group is one rule group.
type Group struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval,omitempty"`
	Rules    []Rule `yaml:"rules"`
}

// Level names of the per-target recording rules. Every per-target rule
// also keeps the daemon labels (Config.DaemonLabels) and engine.
const (
	levelObjective = "target_model_slo_objective"
	levelBound     = "target_model_slo_bound"
)

func rec(name, expr string) Rule { return Rule{Record: name, Expr: strings.TrimSpace(expr) + "\n"} }

// tile is the tile a window is summed from: 5m, or 1h from TileLong on.
func (c Config) tile(w string) string {
	if parseDuration(w) >= c.TileLong {
		return "1h"
	}
	return "5m"
}

// SLO recording rule names for one window.
func sloRequests(w string) string   { return levelObjective + ":llm_slo_requests:rate" + w }
func sloGood(w string) string       { return levelObjective + ":llm_slo_good_requests:rate" + w }
func sloAttainment(w string) string { return levelObjective + ":llm_slo_attainment:ratio_rate" + w }
func sloBurn(w string) string       { return levelObjective + ":llm_slo_burn_rate:ratio_rate" + w }

// Tiles: the 5m rate of the raw counters recorded once every 5m by a
// group of that interval, so that consecutive samples cover consecutive
// windows; and the 1h tile, the mean of the hour's 5m tiles recorded once
// an hour.
func tileRequests(t string) string { return levelObjective + ":llm_slo_requests:tile_rate" + t }
func tileGood(t string) string     { return levelObjective + ":llm_slo_good_requests:tile_rate" + t }

// sloWindow records attainment and burn rate for one window, and for 5m
// the rates of judged and good requests too.
func (c Config) sloWindow(w string) []Rule {
	by := c.by("target", "engine", "model", "slo", "objective")
	var out []Rule
	att := fmt.Sprintf("%s\n  / (%s > 0)", sloGood(w), sloRequests(w))
	if w == "5m" {
		out = append(out,
			rec(sloRequests(w), fmt.Sprintf("sum by (%s) (rate(%s[5m]))", by, c.sel("llm_slo_requests_total"))),
			rec(sloGood(w), fmt.Sprintf("sum by (%s) (rate(%s[5m]))", by, c.sel("llm_slo_good_requests_total"))))
	} else {
		// Good over judged in the tiles of the window: W/5m (W/1h)
		// samples per series, never every raw sample. Tiles in which the
		// series did not exist are left out of both sides, so the
		// attainment is over the traffic seen.
		t := c.tile(w)
		att = fmt.Sprintf("sum_over_time(%s[%s])\n  / (sum_over_time(%s[%s]) > 0)", tileGood(t), w, tileRequests(t), w)
	}
	return append(out,
		// Absent, not 0 and not NaN, when nothing was judged. At most 1
		// (atMostOne).
		rec(sloAttainment(w), atMostOne(att)),
		// Each daemon's target ratio applies to that daemon's targets:
		// joined on the daemon labels, never a fleet-wide max.
		rec(sloBurn(w), fmt.Sprintf("(1 - %s)\n  / on (%s) group_left ()\n    (1 - %s)",
			sloAttainment(w), c.by("slo", "objective"), c.sel("llm_slo_target_ratio"))))
}

// tiles records the tiles of length t in a group evaluated every t: the
// 5m tile is the raw counters' rate over 5m; a longer one sums the 5m
// tiles of its span and divides by their number, so that it reads t/5m
// recorded samples per series instead of every raw sample (an hour of
// 15 s scrapes is 240), and an hour in which a series existed for a part
// only counts that part, as rate over the hour would. Prometheus 2's
// ranges are closed, so a 5m tile recorded exactly at the start of the
// span (one evaluation offset in 300,000) is counted in two spans.
func (c Config) tiles(t string) Group {
	by := c.by("target", "engine", "model", "slo", "objective")
	g := Group{Name: "goodput-exporter.slo-tiles-" + t, Interval: t}
	if t == "5m" {
		fb := c.fleetBy("model", "slo", "objective")
		g.Rules = []Rule{
			rec(tileRequests(t), fmt.Sprintf("sum by (%s) (rate(%s[%s]))", by, c.sel("llm_slo_requests_total"), t)),
			rec(tileGood(t), fmt.Sprintf("sum by (%s) (rate(%s[%s]))", by, c.sel("llm_slo_good_requests_total"), t)),
			// The fleet's tiles, per model: the fleet's hourly attainment
			// sums twelve of these instead of twelve of every target's.
			rec(fleetTileRequests, fmt.Sprintf("sum by (%s) (%s)", fb, tileRequests(t))),
			rec(fleetTileGood, fmt.Sprintf("sum by (%s) (%s)", fb, tileGood(t))),
		}
		return g
	}
	n := int(parseDuration(t) / parseDuration("5m"))
	g.Rules = []Rule{
		rec(tileRequests(t), fmt.Sprintf("sum_over_time(%s[%s]) / %d", tileRequests("5m"), t, n)),
		rec(tileGood(t), fmt.Sprintf("sum_over_time(%s[%s]) / %d", tileGood("5m"), t, n)),
	}
	return g
}

// atMostOne caps an attainment at 1. The good and the judged rates are
// recorded by two rules, two queries: a scrape committed between them
// puts one more sample in the second (good) than in the first, and over a
// short window that can make good exceed judged for an evaluation, most
// when one scrape's increase is large. An attainment above 1 means
// nothing, and its burn rate would be negative.
func atMostOne(expr string) string {
	return "clamp_max(\n  " + strings.ReplaceAll(expr, "\n", "\n  ") + ",\n  1\n)"
}

// The fleet's 5m tiles per model, SLO and objective.
const (
	fleetTileRequests = "model_slo_objective:llm_slo_requests:tile_rate5m"
	fleetTileGood     = "model_slo_objective:llm_slo_good_requests:tile_rate5m"
)

// RecordingGroups are the recording rules (rules/goodput.rules.yml).
func (c Config) RecordingGroups() []Group {
	fast := Group{Name: "goodput-exporter.slo", Interval: c.FastInterval, Rules: c.sloWindow("5m")}
	// One group per window, so that each group's evaluation stays short
	// at fleet scale (docs/benchmarks.md).
	groups := []Group{fast, c.tiles("5m"), c.tiles("1h")}
	for _, w := range c.Windows[1:] {
		iv := c.WindowInterval
		if c.tile(w) != "5m" {
			iv = c.LongInterval
		}
		groups = append(groups, Group{Name: "goodput-exporter.slo-window-" + w, Interval: iv, Rules: c.sloWindow(w)})
	}
	tb := c.by("target")
	tsb := c.by("target", "slo", "bound")
	gp := Group{Name: "goodput-exporter.goodput", Interval: c.FastInterval, Rules: []Rule{
		rec(levelBound+":llm_goodput_requests:rate5m", fmt.Sprintf("sum by (%s) (rate(%s[5m]))",
			c.by("target", "engine", "model", "slo", "bound"), c.sel("llm_goodput_requests_total"))),
		rec(levelBound+":llm_goodput_tokens:rate5m", fmt.Sprintf("sum by (%s) (rate(%s[5m]))",
			c.by("target", "engine", "model", "slo", "bound"), c.sel("llm_goodput_tokens_total"))),
		// Across nodes: the sum of every node's goodput, each judged
		// against its own node's objectives.
		rec("model_slo_bound:llm_goodput_requests:rate5m", fmt.Sprintf("sum by (%s) (%s)",
			c.fleetBy("model", "slo", "bound"), levelBound+":llm_goodput_requests:rate5m")),
		rec("model_slo_bound:llm_goodput_tokens:rate5m", fmt.Sprintf("sum by (%s) (%s)",
			c.fleetBy("model", "slo", "bound"), levelBound+":llm_goodput_tokens:rate5m")),
		rec("model:llm_generation_tokens:rate5m", fmt.Sprintf("sum by (%s) (rate(%s[5m]))",
			c.fleetBy("model"), c.sel("llm_generation_tokens_total"))),
		rec("model_slo_objective:llm_slo_attainment:ratio_rate5m", atMostOne(fmt.Sprintf(
			"sum by (%[1]s) (%[2]s)\n  / (sum by (%[1]s) (%[3]s) > 0)",
			c.fleetBy("model", "slo", "objective"), sloGood("5m"), sloRequests("5m")))),
		rec("model_slo_objective:llm_slo_attainment:ratio_rate1h", atMostOne(fmt.Sprintf(
			"sum_over_time(%[1]s[1h])\n  / (sum_over_time(%[2]s[1h]) > 0)",
			fleetTileGood, fleetTileRequests))),
		// Energy has no model label: GPUs are attributed to targets.
		rec("target:llm_engine_gpu_energy_joules_per_token:ratio_rate5m", fmt.Sprintf(
			"sum by (%[1]s) (rate(%[2]s[5m]))\n  / (sum by (%[1]s) (rate(%[3]s[5m])) > 0)",
			tb, c.sel("llm_engine_gpu_energy_joules_total"), c.sel("llm_generation_tokens_total"))),
		// bound="lower" divides by the lower goodput bound: the higher
		// joules per good token.
		// The good tokens' rate is the one recorded above, in this group
		// (rules of a group run in order, each seeing what the ones
		// before it recorded at the same instant): the raw counters are
		// read once.
		rec("target_slo_bound:llm_engine_gpu_energy_joules_per_good_token:ratio_rate5m", fmt.Sprintf(
			"sum by (%[1]s) (rate(%[2]s[5m]))\n  / on (%[1]s) group_right ()\n    (sum by (%[3]s) (%[4]s) > 0)",
			tb, c.sel("llm_engine_gpu_energy_joules_total"), tsb, levelBound+":llm_goodput_tokens:rate5m")),
		// Hourly cost / 3600 / good tok/s * 1e6; bound="lower" is the
		// higher cost.
		rec("target_slo_bound:llm_cost_per_million_good_tokens:ratio_rate5m", fmt.Sprintf(
			"max by (%[1]s) (%[2]s) / 3600 * 1e6\n  / on (%[3]s) group_right (currency)\n    (sum by (%[4]s) (%[5]s) > 0)",
			c.by("target", "currency"), c.sel("llm_engine_hourly_cost"), tb, tsb, levelBound+":llm_goodput_tokens:rate5m")),
	}}
	m := c.fleetBy("model")
	eng := Group{Name: "goodput-exporter.engine", Interval: c.FastInterval, Rules: []Rule{
		rec("model:llm_requests_waiting:sum", fmt.Sprintf("sum by (%s) (%s)", m, c.sel("llm_requests_waiting"))),
		rec("model:llm_requests_running:sum", fmt.Sprintf("sum by (%s) (%s)", m, c.sel("llm_requests_running"))),
		rec("model:llm_kv_cache_usage_ratio:max", fmt.Sprintf("max by (%s) (%s)", m, c.sel("llm_kv_cache_usage_ratio"))),
		rec("model:llm_kv_cache_usage_ratio:avg", fmt.Sprintf("avg by (%s) (%s)", m, c.sel("llm_kv_cache_usage_ratio"))),
		rec("model:llm_preemptions:rate5m", fmt.Sprintf("sum by (%s) (rate(%s[5m]))", m, c.sel("llm_preemptions_total"))),
	}}
	return c.scaled(append(groups, gp, eng, c.windowBounds()))
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
