package mixin

import "strings"

// RouteFile is the Alertmanager route the mixin ships beside InhibitFile:
// it goes into the routes of alertmanager.yml's route.
const RouteFile = "deploy/alertmanager/route.yml"

// Route is one Alertmanager route: alerts matching Matchers are grouped
// by GroupBy, each group one notification (Alertmanager 0.22 or later).
type Route struct {
	Matchers []string `yaml:"matchers,omitempty"`
	GroupBy  []string `yaml:"group_by,omitempty"`
	Routes   []Route  `yaml:"routes,omitempty"`
}

// Route groups the mixin's alerts so that one cause is one notification:
// every alert by its daemon, target and name (the failure-mode alerts of
// a target, and LLMEngineDown, which fires once per model the target last
// served, are one group each); the burn-rate alerts by daemon, target and
// SLO, whatever their objective, model or window, so that an overload
// that breaks TTFT, TPOT and end-to-end latency at once is one page, with
// the slower windows of each objective inhibited (burnInhibitRules).
func (c Config) Route() Route {
	var names []string
	for _, r := range c.Alerts() {
		names = append(names, r.Alert)
	}
	by := func(extra ...string) []string { return append(c.daemonLabels(), extra...) }
	return Route{
		Matchers: []string{alertNames(names...)},
		GroupBy:  by("target", "alertname"),
		Routes: []Route{{
			Matchers: []string{alertNames(c.burnAlertNames()...)},
			GroupBy:  by("target", "slo"),
		}},
	}
}

// routeSnippet renders RouteFile.
func (c Config) routeSnippet() ([]byte, error) {
	y, err := marshal(map[string][]Route{"routes": {c.Route()}})
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(header)
	for _, line := range wrap("The Alertmanager route for the mixin's alerts: add it to the routes of "+
		"the route of alertmanager.yml, before any route that matches them, with your receiver "+
		"(without one, the parent route's is used). One notification per daemon, target and alert; "+
		"the burn-rate alerts of one SLO on one target, all objectives, models and windows, are one. "+
		"Use it with the inhibit rules of inhibit-rules.yml. "+
		"docs/rules-and-dashboards.md, \"Routing and inhibit rules\", says why.", 74) {
		b.WriteString("# " + line + "\n")
	}
	b.Write(y)
	return []byte(b.String()), nil
}
