// Package mixin generates the monitoring mixin shipped with the exporter:
// recording rules, alerts, Grafana dashboards, runbooks and a
// PrometheusRule manifest, all from one Config. The generated files are
// committed; `go generate ./mixin` (or `make mixin`) rewrites them and
// mixin_test.go fails when they differ from what the code generates.
package mixin

//go:generate go run ../cmd/mixin-gen -root ..

import (
	"fmt"
	"strings"
	"time"

	"github.com/goodput-exporter/goodput-exporter/diagnosis"
)

// BurnAlert is one multi-window burn-rate alert: it fires while the error
// budget burns faster than Factor times the sustainable rate over both
// windows (Google SRE workbook, chapter 5).
type BurnAlert struct {
	Long, Short string // windows; each must be one of Config.Windows
	Factor      float64
	For         string
	Severity    string
}

// Config is the one place the mixin is configured.
type Config struct {
	// Selector is added to every selector of a daemon series, so that the
	// rules only read this exporter's job.
	Selector string
	// ClusterLabel names the cluster a series comes from where several
	// Prometheus servers meet in one global view (Thanos Query, Mimir):
	// the external label each Prometheus sets (kubernetes-mixin's
	// clusterLabel convention). Every aggregation and join of every
	// rule, alert and dashboard query keeps it, so that two clusters'
	// series never merge into one number; where it is absent (one
	// Prometheus, no external label) it is simply empty on both sides.
	// Only the global groups (GlobalGroups) sum across clusters, and
	// they say so in their names (global_ level).
	ClusterLabel string
	// DaemonLabels identify one daemon (one node's exporter) within a
	// cluster. Every per-target rule keeps them and ClusterLabel, and the
	// SLO target is joined on them: the same target name on two nodes
	// stays two targets, and each node's target ratio applies to its own
	// targets only.
	// The node label (NodeLabel) is kept too, so that dashboards can
	// filter recorded series by node; where the scrape sets none it is
	// simply empty on both sides of every join.
	DaemonLabels []string
	// FleetLabels are kept by the fleet aggregates (per model, per SLO).
	FleetLabels []string
	// NodeLabel is the label the scrape configuration sets to the node's
	// name (deploy/prometheus, deploy/kubernetes: "node").
	NodeLabel string

	// Windows over which attainment and burn rate are recorded. Those up
	// to RawUpTo read the raw counters; the others sum tiles: the rate
	// of the raw counters recorded once every 5m by a group of that
	// interval, and from TileLong on the mean of an hour's 5m tiles
	// recorded once an hour, so that a window reads W/5m (W/1h) samples
	// per series, never every raw sample. Each window is a group.
	Windows  []string
	TileLong time.Duration
	// RawUpTo: windows up to this one read the raw counters instead of
	// tiles (rate over the window, one query for good and judged), so
	// that they move with every scrape: the short windows of the burn
	// alerts (5m, 30m) and the fastest page's long window (1h).
	RawUpTo time.Duration
	// BudgetPeriod is the SLO period the burn rates refer to.
	BudgetPeriod string
	// Group evaluation intervals: the 5m window and the other groups,
	// windows summed from 5m tiles, windows summed from 1h tiles.
	FastInterval, WindowInterval, LongInterval string

	// BurnAlerts, in the order of the burn-rate table of docs/rules-and-dashboards.md.
	BurnAlerts []BurnAlert

	// The failure-mode classifier's hysteresis (Default: the daemon's): it
	// judges its trailing DiagnosisWindow once per collection cycle; a
	// mode is raised after DiagnosisEnter consecutive matching
	// judgements, cleared after DiagnosisLeave clean ones.
	DiagnosisWindow                time.Duration
	DiagnosisEnter, DiagnosisLeave int
	// DiagnosisQueueSustain: queue_growth is raised only once its
	// matching judgements span this long (queue_sustain).
	DiagnosisQueueSustain time.Duration
	// FailureModeSeverity per mode; absent modes get TicketSeverity.
	FailureModeSeverity map[string]string

	PageSeverity, TicketSeverity string
	// RunbookURL is a fmt pattern taking the alert's name.
	RunbookURL string

	// Namespace and name of the PrometheusRule.
	RuleNamespace, RuleName string

	// TimeScale, above 1, divides every duration the rules evaluate
	// (range selectors, for: and group intervals) by it, for a test that
	// runs the rules against engines on a faster clock (e2e/). Names and
	// texts keep the nominal windows: ratio_rate5m is still called so,
	// whatever range it reads. 0 or 1 renders the rules as shipped.
	TimeScale float64
}

// Default is the configuration of the committed files. The classifier's
// hysteresis the alerts and panels state is the daemon's own default.
func Default() Config {
	d := diagnosis.DefaultSettings()
	return Config{
		Selector:       `job="goodput-exporter"`,
		ClusterLabel:   "cluster",
		DaemonLabels:   []string{"instance", "job", "node"},
		FleetLabels:    nil,
		NodeLabel:      "node",
		Windows:        []string{"5m", "30m", "1h", "2h", "6h", "1d", "3d"},
		TileLong:       24 * time.Hour,
		RawUpTo:        time.Hour,
		BudgetPeriod:   "30d",
		FastInterval:   "30s",
		WindowInterval: "1m",
		LongInterval:   "2m",
		BurnAlerts: []BurnAlert{
			// for: two evaluations of the group that records the short
			// window (5m: 30s, 30m: 1m), so that a burn is seen after two
			// scrapes, or one new tile of it (2h, 6h: 5m). Nothing
			// longer: the long window already demands a sustained burn,
			// and a longer for: only pages later, after the incident is
			// over (Google SRE workbook, chapter 5, uses none).
			{Long: "1h", Short: "5m", Factor: 14.4, For: "1m", Severity: "critical"},
			{Long: "6h", Short: "30m", Factor: 6, For: "2m", Severity: "critical"},
			{Long: "1d", Short: "2h", Factor: 3, For: "5m", Severity: "warning"},
			{Long: "3d", Short: "6h", Factor: 1, For: "5m", Severity: "warning"},
		},
		DiagnosisWindow:       d.Window,
		DiagnosisEnter:        d.Enter,
		DiagnosisLeave:        d.Leave,
		DiagnosisQueueSustain: d.Thresholds.Sustain(),
		FailureModeSeverity: map[string]string{
			"engine_stall":  "critical",
			"kv_preemption": "critical",
			"queue_growth":  "critical",
		},
		PageSeverity:   "critical",
		TicketSeverity: "warning",
		RunbookURL:     "https://github.com/goodput-exporter/goodput-exporter/blob/main/docs/runbooks/%s.md",
		RuleNamespace:  "monitoring",
		RuleName:       "goodput-exporter",
	}
}

// fastestBurn is the burn alert of the highest factor: the fastest page.
func (c Config) fastestBurn() BurnAlert {
	var b BurnAlert
	for _, a := range c.BurnAlerts {
		if a.Factor > b.Factor {
			b = a
		}
	}
	return b
}

// raisedAfter says after what the classifier raises mode: DiagnosisEnter
// matching judgements in a row, which for queue_growth must also span
// DiagnosisQueueSustain, breaks of fewer than DiagnosisLeave clean
// judgements (or a standing queue's pause) not counting as breaks.
func (c Config) raisedAfter(mode string) string {
	s := fmt.Sprintf("%d matching judgements in a row", c.DiagnosisEnter)
	if mode == "queue_growth" && c.DiagnosisQueueSustain > 0 {
		s += fmt.Sprintf(" spanning at least %s (queue_sustain: a queue at the knee surges and drains within tens of seconds; fewer than %d clean judgements, or a pause of a queue long enough to break TTFT by itself, do not break the run)", promDuration(c.DiagnosisQueueSustain), c.DiagnosisLeave)
	}
	return s
}

// FailureModes are the classifier's eight modes, in its order.
var FailureModes = []string{"queue_growth", "kv_preemption", "prefill_interference", "kv_monopoly",
	"prefix_cache_collapse", "decode_saturation", "gpu_throttling", "engine_stall"}

// FailureModeFor is the alerts' for: one classifier window. The
// classifier has already matched DiagnosisEnter judgements in a row
// before it raises a mode, and holds it for DiagnosisLeave clean ones, so
// the verdict does not flap; for: adds one window so that a verdict must
// survive a window of further judgements (and a lost scrape or two)
// before anyone is paged, and adds nothing to the resolution, which the
// classifier's DiagnosisLeave clean judgements already delay.
func (c Config) FailureModeFor() string { return promDuration(c.DiagnosisWindow) }

// by is "a, b, c" of the cluster and daemon labels followed by extra.
func (c Config) by(extra ...string) string {
	return strings.Join(append(c.daemonLabels(), extra...), ", ")
}

// daemonLabels are the labels that identify one daemon in the fleet: the
// cluster label, then DaemonLabels.
func (c Config) daemonLabels() []string {
	return append(c.clusterLabels(), c.DaemonLabels...)
}

// clusterLabels is ClusterLabel as a list, empty when unset.
func (c Config) clusterLabels() []string {
	if c.ClusterLabel == "" {
		return nil
	}
	return []string{c.ClusterLabel}
}

// fleetBy is the labels of a per-cluster fleet aggregate: the cluster
// label, FleetLabels, then extra.
func (c Config) fleetBy(extra ...string) string {
	return strings.Join(append(append(c.clusterLabels(), c.FleetLabels...), extra...), ", ")
}

// sel is a series selector with the configured matchers and extra ones.
func (c Config) sel(metric string, matchers ...string) string {
	var m []string
	if c.Selector != "" {
		m = append(m, c.Selector)
	}
	m = append(m, matchers...)
	if len(m) == 0 {
		return metric
	}
	return metric + "{" + strings.Join(m, ", ") + "}"
}

func (c Config) runbook(alert string) string { return fmt.Sprintf(c.RunbookURL, alert) }

// promDuration writes d as Prometheus does (1m, 1h30m, 1d).
func promDuration(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	var b strings.Builder
	if h := d / time.Hour; h > 0 {
		fmt.Fprintf(&b, "%dh", h)
		d -= h * time.Hour
	}
	if m := d / time.Minute; m > 0 {
		fmt.Fprintf(&b, "%dm", m)
		d -= m * time.Minute
	}
	if s := d / time.Second; s > 0 {
		fmt.Fprintf(&b, "%ds", s)
	}
	return b.String()
}

// parseDuration reads a Prometheus duration with d units.
func parseDuration(s string) time.Duration {
	if strings.HasSuffix(s, "d") {
		var n int
		fmt.Sscanf(s, "%dd", &n)
		return time.Duration(n) * 24 * time.Hour
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(fmt.Sprintf("mixin: bad duration %q", s))
	}
	return d
}
