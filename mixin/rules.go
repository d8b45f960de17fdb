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
	// PartialResponseStrategy is Thanos Ruler's (abort or warn); global
	// groups only (GlobalGroups): Prometheus refuses the field.
	PartialResponseStrategy string `yaml:"partial_response_strategy,omitempty"`
	Rules                   []Rule `yaml:"rules"`
}

// Level names of the per-target recording rules. Every per-target rule
// also keeps the daemon labels (Config.DaemonLabels) and engine.
const (
	levelObjective = "target_model_slo_objective"
	levelBound     = "target_model_slo_bound"
)

func rec(name, expr string) Rule { return Rule{Record: name, Expr: strings.TrimSpace(expr) + "\n"} }

// raw reports whether window w reads the raw counters (up to RawUpTo:
// the 5m window, and the short windows a burn-rate page needs at once).
func (c Config) raw(w string) bool { return parseDuration(w) <= c.RawUpTo }

// tile is the tile a longer window is summed from: 5m, or 1h from
// TileLong on.
func (c Config) tile(w string) string {
	if parseDuration(w) >= c.TileLong {
		return "1h"
	}
	return "5m"
}

// SLO recording rule names for one window.
func sloAttainment(w string) string { return levelObjective + ":llm_slo_attainment:ratio_rate" + w }
func sloBurn(w string) string       { return levelObjective + ":llm_slo_burn_rate:ratio_rate" + w }

// Judged and good requests recorded together, by one rule, as one series
// family with an outcome label ("judged", "good"): both come from one
// query over the same samples and are written in one commit, so no
// reader ever sees one without the other. sloOutcome is the 5m rate; the
// tiles are the 5m rate recorded once every 5m by a group of that
// interval, so that consecutive samples cover consecutive windows, and
// the 1h tile, the mean of the hour's 5m tiles recorded once an hour.
const levelOutcome = levelObjective + "_outcome"

func sloOutcome(w string) string { return levelOutcome + ":llm_slo_requests:rate" + w }
func tileOutcome(t string) string {
	return levelOutcome + ":llm_slo_requests:tile_rate" + t
}

// outcomes is one query for the rate of judged and of good requests over
// r, by the given labels, told apart by the outcome label.
func (c Config) outcomes(by, r string) string {
	return fmt.Sprintf(`label_replace(
  sum by (%[1]s) (rate(%[2]s[%[4]s])),
  "outcome", "judged", "", ""
)
or
label_replace(
  sum by (%[1]s) (rate(%[3]s[%[4]s])),
  "outcome", "good", "", ""
)`, by, c.sel("llm_slo_requests_total"), c.sel("llm_slo_good_requests_total"), r)
}

// goodOverJudged divides the good by the judged of an outcome series (or
// of an expression f applied to one), absent where nothing was judged.
func goodOverJudged(f func(outcome string) string) string {
	return fmt.Sprintf("%s\n  / ignoring (outcome)\n    (%s > 0)", f(`outcome="good"`), f(`outcome="judged"`))
}

// sloWindow records attainment and burn rate for one window, and for 5m
// the rates of judged and good requests too (one outcome series). Each window's attainment is
// one expression that reads good and judged from the same samples:
//   - 5m: the outcome series recorded just before it in the same group;
//   - up to RawUpTo (30m, 1h): the raw counters, both in this one query;
//   - longer: the outcome tiles of the window.
func (c Config) sloWindow(w string) []Rule {
	by := c.by("target", "engine", "model", "slo", "objective")
	var out []Rule
	var att string
	switch {
	case w == "5m":
		out = append(out, rec(sloOutcome(w), c.outcomes(by, w)))
		att = goodOverJudged(func(o string) string { return sloOutcome(w) + "{" + o + "}" })
	case c.raw(w):
		// Every raw sample of the window (W/scrape interval per series),
		// so that the window moves with every scrape: a total breakdown
		// shows in the 1h burn rate within a minute, where tiles showed
		// it only when the next tile was recorded.
		att = fmt.Sprintf("sum by (%[1]s) (rate(%[2]s[%[4]s]))\n  / (sum by (%[1]s) (rate(%[3]s[%[4]s])) > 0)",
			by, c.sel("llm_slo_good_requests_total"), c.sel("llm_slo_requests_total"), w)
	default:
		// Good over judged in the tiles of the window: W/5m (W/1h)
		// samples per series, never every raw sample. Tiles in which the
		// series did not exist are left out of both sides, so the
		// attainment is over the traffic seen.
		t := c.tile(w)
		att = goodOverJudged(func(o string) string {
			return fmt.Sprintf("sum_over_time(%s{%s}[%s])", tileOutcome(t), o, w)
		})
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
		g.Rules = []Rule{
			rec(tileOutcome(t), c.outcomes(by, t)),
			// The fleet's tiles, per model: the fleet's hourly attainment
			// sums twelve of these instead of twelve of every target's.
			rec(fleetTileOutcome, fmt.Sprintf("sum by (%s) (%s)", c.fleetBy("model", "slo", "objective", "outcome"), tileOutcome(t))),
		}
		return g
	}
	n := int(parseDuration(t) / parseDuration("5m"))
	g.Rules = []Rule{rec(tileOutcome(t), fmt.Sprintf("sum_over_time(%s[%s]) / %d", tileOutcome("5m"), t, n))}
	return g
}

// atMostOne caps an attainment at 1. Good and judged come from one query
// over the same samples, and the daemon never counts a request good that
// it did not judge, yet rate() can still make good exceed judged where a
// counter starts inside the range (the first samples Prometheus has of a
// daemon, e.g. one just scraped for the first time): it extrapolates a
// counter towards the range's start by the time its first value would
// take to reach zero when that is under 1.1 scrape intervals, and by half
// an interval otherwise, so good (a smaller first value) can be
// extrapolated further than judged, by up to 0.6 of a scrape interval
// (rules/tests/clamp_test.yml builds such a start for every window). An
// attainment above 1 means nothing, and its burn rate would be negative.
func atMostOne(expr string) string {
	return "clamp_max(\n  " + strings.ReplaceAll(expr, "\n", "\n  ") + ",\n  1\n)"
}

// The fleet's 5m tiles per model, SLO, objective and outcome.
const fleetTileOutcome = "model_slo_objective_outcome:llm_slo_requests:tile_rate5m"

// RecordingGroups are the recording rules (rules/goodput.rules.yml).
func (c Config) RecordingGroups() []Group {
	fast := Group{Name: "goodput-exporter.slo", Interval: c.FastInterval, Rules: c.sloWindow("5m")}
	// One group per window, so that each group's evaluation stays short
	// at fleet scale (docs/benchmarks.md).
	groups := []Group{fast, c.tiles("5m"), c.tiles("1h")}
	for _, w := range c.Windows[1:] {
		iv := c.WindowInterval
		switch {
		case w == c.fastestBurn().Long:
			// The fastest page's long window is evaluated as often as
			// its short one, so that a breakdown pages within minutes.
			iv = c.FastInterval
		case !c.raw(w) && c.tile(w) != "5m":
			iv = c.LongInterval
		}
		groups = append(groups, Group{Name: "goodput-exporter.slo-window-" + w, Interval: iv, Rules: c.sloWindow(w)})
	}
	tb := c.by("target")
	tsb := c.by("target", "slo", "bound")
	gp := Group{Name: "goodput-exporter.goodput", Interval: c.FastInterval, Rules: []Rule{
		rec(levelBound+":llm_goodput_requests:rate5m", fmt.Sprintf("sum by (%s) (rate(%s[5m]))",
			c.by("target", "engine", "model", "slo", "bound"), c.sel("llm_goodput_requests_total"))),
		// The lower and upper bounds from the window's totals (the
		// goodput-window-bounds group), which hold in any window; the
		// daemon's per-interval sums only where the tokens are an
		// estimate anyway (no output-length histogram, or a per-token
		// objective); exact and sampled from the trace spans.
		rec(levelBound+":llm_goodput_tokens:rate5m", fmt.Sprintf(
			"sum by (%[1]s) (%[2]s) / %[7]s\nor\n(\n  sum by (%[1]s) (rate(%[3]s[5m]))\n    unless on (%[4]s)\n  (%[5]s == 1)\n)\nor\nsum by (%[1]s) (rate(%[6]s[5m]))",
			c.by("target", "engine", "model", "slo", "bound"), boundTokens("5m"), c.sel("llm_goodput_tokens_total", `bound=~"lower|upper"`),
			c.by("target", "engine", "model", "slo"), c.sel("llm_goodput_tokens_bounded"), c.sel("llm_goodput_tokens_total", `bound!~"lower|upper"`), c.windowSeconds("5m"))),
		// Across nodes: the sum of every node's goodput, each judged
		// against its own node's objectives.
		rec("model_slo_bound:llm_goodput_requests:rate5m", fmt.Sprintf("sum by (%s) (%s)",
			c.fleetBy("model", "slo", "bound"), levelBound+":llm_goodput_requests:rate5m")),
		rec("model_slo_bound:llm_goodput_tokens:rate5m", fmt.Sprintf("sum by (%s) (%s)",
			c.fleetBy("model", "slo", "bound"), levelBound+":llm_goodput_tokens:rate5m")),
		rec("model:llm_generation_tokens:rate5m", fmt.Sprintf("sum by (%s) (rate(%s[5m]))",
			c.fleetBy("model"), c.sel("llm_generation_tokens_total"))),
		// Each from one query over one outcome series (sloWindow).
		rec("model_slo_objective:llm_slo_attainment:ratio_rate5m", atMostOne(goodOverJudged(func(o string) string {
			return fmt.Sprintf("sum by (%s) (%s{%s})", c.fleetBy("model", "slo", "objective"), sloOutcome("5m"), o)
		}))),
		rec("model_slo_objective:llm_slo_attainment:ratio_rate1h", atMostOne(goodOverJudged(func(o string) string {
			return fmt.Sprintf("sum_over_time(%s{%s}[1h])", fleetTileOutcome, o)
		}))),
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
