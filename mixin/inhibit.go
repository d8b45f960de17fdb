package mixin

import (
	"fmt"
	"regexp"
	"strings"
)

// InhibitFile is the Alertmanager snippet the mixin ships: its
// inhibit_rules go into the inhibit_rules of alertmanager.yml.
const InhibitFile = "deploy/alertmanager/inhibit-rules.yml"

// InhibitRule is one Alertmanager inhibition rule (Alertmanager 0.22 and
// later): while an alert matching Source fires, alerts matching Target
// with the same values of Equal are not notified (Alertmanager still
// shows them, marked inhibited).
type InhibitRule struct {
	Source []string `yaml:"source_matchers"`
	Target []string `yaml:"target_matchers"`
	Equal  []string `yaml:"equal"`

	// Why is written above the rule in the snippet.
	Why string `yaml:"-"`
}

// alertNames matches exactly the given alert names.
func alertNames(names ...string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	return fmt.Sprintf("alertname=~%q", strings.Join(q, "|"))
}

// failureModeAlerts are the names of the failure-mode alerts, of the
// given severity ("" for all).
func (c Config) failureModeAlertNames(severity string) []string {
	var out []string
	for _, m := range FailureModes {
		sev := c.FailureModeSeverity[m]
		if sev == "" {
			sev = c.TicketSeverity
		}
		if severity == "" || sev == severity {
			out = append(out, "LLM"+camel(m))
		}
	}
	return out
}

func (c Config) burnAlertNames() []string {
	var out []string
	for _, b := range c.BurnAlerts {
		out = append(out, BurnAlertName(b))
	}
	return out
}

// InhibitRules are the inhibitions that make one cause one page.
func (c Config) InhibitRules() []InhibitRule {
	target := append(c.daemonLabels(), "target")
	daemon := c.daemonLabels()
	onEngine := append(append(append([]string{}, c.failureModeAlertNames("")...), c.burnAlertNames()...),
		"LLMEngineNotServing", "LLMEngineSeriesAbsent", "LLMCapacityHeadroomLow")
	var fromDaemon []string
	for _, r := range append(append(append(c.failureModeAlerts(), c.burnAlerts()...), c.engineAlerts()...), c.capacityAlerts()...) {
		fromDaemon = append(fromDaemon, r.Alert)
	}
	for _, r := range c.selfAlerts() {
		if r.Alert != "GoodputExporterDown" && r.Alert != "GoodputExporterAbsent" {
			fromDaemon = append(fromDaemon, r.Alert)
		}
	}
	return append([]InhibitRule{
		{
			Why: "A down engine is one page, LLMEngineDown: its stall, queue, other failure-mode, " +
				"SLO burn-rate, not-serving, series and headroom alerts on the same daemon and target say nothing more.",
			Source: []string{`alertname="LLMEngineDown"`},
			Target: []string{alertNames(onEngine...)},
			Equal:  target,
		},
		{
			Why: "A daemon Prometheus cannot scrape is one ticket, GoodputExporterDown: " +
				"whatever alerts its series still raise (they go stale) belong to it.",
			Source: []string{`alertname="GoodputExporterDown"`},
			Target: []string{alertNames(fromDaemon...)},
			Equal:  daemon,
		},
		{
			Why: "A critical failure-mode alert names the cause of a burn and its remedy, " +
				"and fires within minutes of the onset, as fast as the fastest burn page: " +
				"it inhibits the burn-rate alerts of the same target, so one incident is one page, the one that says what to do. " +
				"Warning failure modes do not: a ticket must never hide a page. The burn alert stays visible in Alertmanager, " +
				"and pages once the failure mode clears while the budget still burns.",
			Source: []string{alertNames(c.failureModeAlertNames(c.PageSeverity)...), fmt.Sprintf("severity=%q", c.PageSeverity)},
			Target: []string{alertNames(c.burnAlertNames()...)},
			Equal:  target,
		},
		{
			Why:    "A hung engine: the classifier's LLMEngineStall fires before LLMEngineNotServing (for: 5m) and names the same cause.",
			Source: []string{`alertname="LLMEngineStall"`},
			Target: []string{`alertname="LLMEngineNotServing"`},
			Equal:  target,
		},
	}, append(c.burnInhibitRules(), c.globalInhibitRules()...)...)
}

// burnInhibitRules fold the burn-rate alerts of one objective into the
// fastest that fires: each burn alert mutes the slower ones (longer
// windows) of the same daemon, target, model, SLO and objective that are
// no more severe than itself. Objectives are not folded into one another
// here (TTFT and TPOT can break for different causes, and each says
// which): the route (RouteFile) groups them, one notification per target
// and SLO.
func (c Config) burnInhibitRules() []InhibitRule {
	rank := func(sev string) int {
		if sev == c.PageSeverity {
			return 1
		}
		return 0
	}
	equal := append(c.daemonLabels(), "target", "model", "slo", "objective")
	var out []InhibitRule
	for i, b := range c.BurnAlerts {
		var slower []string
		for _, o := range c.BurnAlerts[i+1:] {
			if rank(o.Severity) <= rank(b.Severity) {
				slower = append(slower, BurnAlertName(o))
			}
		}
		if len(slower) == 0 {
			continue
		}
		out = append(out, InhibitRule{
			Why: fmt.Sprintf("%s, the %s window burning, mutes the slower burn alerts of the same objective (%s): "+
				"they say the same thing later. Each pages or tickets on its own once the faster one resolves while the budget still burns.",
				BurnAlertName(b), b.Long, strings.Join(slower, ", ")),
			Source: []string{fmt.Sprintf("alertname=%q", BurnAlertName(b))},
			Target: []string{alertNames(slower...)},
			Equal:  equal,
		})
	}
	return out
}

// inhibitSnippet renders InhibitFile.
func (c Config) inhibitSnippet() ([]byte, error) {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("# Alertmanager inhibit rules for the mixin's alerts: add them to the\n" +
		"# inhibit_rules of alertmanager.yml (Alertmanager 0.22 or later).\n" +
		"# docs/rules-and-dashboards.md, \"Routing and inhibit rules\", says what each does and why.\n" +
		"inhibit_rules:\n")
	for _, r := range c.InhibitRules() {
		y, err := marshal([]InhibitRule{r})
		if err != nil {
			return nil, err
		}
		for _, line := range wrap(r.Why, 74) {
			b.WriteString("  # " + line + "\n")
		}
		for _, line := range strings.Split(strings.TrimRight(string(y), "\n"), "\n") {
			b.WriteString("  " + line + "\n")
		}
	}
	return []byte(b.String()), nil
}

// wrap breaks s into lines of at most n characters at spaces.
func wrap(s string, n int) []string {
	var out []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > n {
			out = append(out, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(out, line)
}
