package mixin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/goodput-exporter/goodput-exporter/internal/promtool"
)

// dropsCluster lists every aggregation and vector match of expr that
// would merge series of two clusters: a by () without the cluster label,
// a without () or ignoring () naming it, an on () without it. The one
// exception is "or on () vector(…)" (statCount): a constant of no
// cluster that only stands in where no series exists at all.
func dropsCluster(expr, cluster string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(dashboardVars.Replace(expr))
	if err != nil {
		return nil, err
	}
	var bad []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.AggregateExpr:
			if n.Without == slices.Contains(n.Grouping, cluster) {
				bad = append(bad, n.String())
			}
		case *parser.BinaryExpr:
			m := n.VectorMatching
			if m == nil || n.LHS.Type() != parser.ValueTypeVector || n.RHS.Type() != parser.ValueTypeVector {
				return nil
			}
			if m.On && len(m.MatchingLabels) == 0 && (isVectorCall(n.LHS) || isVectorCall(n.RHS)) {
				return nil
			}
			if m.On != slices.Contains(m.MatchingLabels, cluster) {
				bad = append(bad, n.String())
			}
		}
		return nil
	})
	return bad, nil
}

func isVectorCall(e parser.Expr) bool {
	c, ok := e.(*parser.Call)
	return ok && c.Func.Name == "vector"
}

// lintedQueries are the queries the cluster lint reads: every recording
// rule and alert of the per-cluster files, every global rule that does
// not say (global_ level) it sums across clusters, and every dashboard
// query. The runbooks' queries are for one alert's labels and are left out.
func lintedQueries(c Config) map[string]string {
	out := map[string]string{}
	for _, g := range append(c.RecordingGroups(), c.AlertGroups()...) {
		for _, r := range g.Rules {
			out[g.Name+"/"+r.Record+r.Alert] = r.Expr
		}
	}
	for _, g := range c.GlobalGroups() {
		for _, r := range g.Rules {
			if !acrossClusters(r) {
				out[g.Name+"/"+r.Record+r.Alert] = r.Expr
			}
		}
	}
	for _, d := range c.Dashboards() {
		for _, r := range d.Rows {
			for _, p := range r.Panels {
				for i, q := range p.Exprs {
					out[fmt.Sprintf("dashboard %s/%s/%d", d.UID, p.Title, i)] = q.Expr
				}
			}
		}
	}
	return out
}

// Every aggregation and join of every rule, alert and dashboard query
// keeps the cluster label, under the default name and under another.
func TestEveryAggregationKeepsCluster(t *testing.T) {
	for _, name := range []string{"cluster", "k8s_cluster"} {
		c := Default()
		c.ClusterLabel = name
		qs := lintedQueries(c)
		if len(qs) < 100 {
			t.Fatalf("only %d queries", len(qs))
		}
		for where, q := range qs {
			bad, err := dropsCluster(q, name)
			if err != nil {
				t.Errorf("%s: %v", where, err)
			}
			for _, b := range bad {
				t.Errorf("%s: %q drops %s", where, b, name)
			}
		}
	}
}

// The lint refuses a rule that drops the cluster label: each mutation
// of a real recording rule, alert and dashboard query is caught.
func TestClusterLintRefusesMutants(t *testing.T) {
	c := Default()
	qs := lintedQueries(c)
	mutants := map[string]func(string) string{
		// The rule as it was before the cluster label existed.
		"by without cluster": func(q string) string { return strings.ReplaceAll(q, "by (cluster, ", "by (") },
		"on without cluster": func(q string) string { return strings.ReplaceAll(q, "on (cluster, ", "on (") },
		"sum by nothing":     func(q string) string { return strings.Replace(q, "sum by (cluster, ", "sum by (", 1) },
		"without cluster": func(q string) string {
			return strings.Replace(q, "count by (cluster) (", "count without (cluster) (", 1)
		},
		"or vector(0)": func(q string) string { return strings.Replace(q, "count by (cluster) (", "count (", 1) },
	}
	targets := []string{
		"goodput-exporter.goodput/model_slo_bound:llm_goodput_requests:rate5m",
		"goodput-exporter.slo-window-1h/" + sloBurn("1h"),
		"goodput-exporter.slo-alerts/LLMErrorBudgetBurn1h",
		"dashboard goodput-overview/Targets down/0",
	}
	for _, where := range targets {
		q, ok := qs[where]
		if !ok {
			t.Fatalf("no query %s", where)
		}
		if bad, _ := dropsCluster(q, "cluster"); len(bad) > 0 {
			t.Fatalf("%s already refused: %v", where, bad)
		}
		caught := 0
		for name, m := range mutants {
			mq := m(q)
			if mq == q {
				continue
			}
			bad, err := dropsCluster(mq, "cluster")
			if err != nil {
				t.Fatalf("%s %s: %v", where, name, err)
			}
			if len(bad) == 0 {
				t.Errorf("%s with %s: %q not refused", where, name, mq)
			}
			caught++
		}
		if caught == 0 {
			t.Errorf("%s: no mutant applies", where)
		}
	}
}

// A single-cluster user changes nothing: with the label absent from
// every series, "by (cluster, …)" groups as "by (…)" did, so the
// committed rules keep every other label they kept before.
func TestClusterLabelIsOnlyAdded(t *testing.T) {
	with, without := Default(), Default()
	without.ClusterLabel = ""
	a, b := with.RecordingGroups(), without.RecordingGroups()
	for i := range a {
		for j := range a[i].Rules {
			got := strings.NewReplacer("cluster, ", "", "by (cluster) (", "(").Replace(a[i].Rules[j].Expr)
			if got != b[i].Rules[j].Expr {
				t.Errorf("%s: the cluster label changed more than the grouping:\n%s\nvs\n%s", a[i].Rules[j].Record, got, b[i].Rules[j].Expr)
			}
		}
	}
}

// The global groups are the only ones that say how Thanos Ruler treats a
// partial response, every one of them does, and no rule that sums across
// clusters is in a per-cluster file: a per-cluster Prometheus sees one
// cluster, and its "global" sum would be that cluster's.
func TestGlobalGroupsApart(t *testing.T) {
	c := Default()
	for _, g := range append(c.RecordingGroups(), c.AlertGroups()...) {
		if g.PartialResponseStrategy != "" {
			t.Errorf("per-cluster group %s sets partial_response_strategy, which Prometheus refuses", g.Name)
		}
		for _, r := range g.Rules {
			if acrossClusters(r) {
				t.Errorf("per-cluster group %s holds %s%s, which sums across clusters", g.Name, r.Record, r.Alert)
			}
		}
	}
	gs := c.GlobalGroups()
	if len(gs) < 2 {
		t.Fatalf("%d global groups", len(gs))
	}
	across := 0
	for _, g := range gs {
		if g.PartialResponseStrategy != PartialAbort && g.PartialResponseStrategy != PartialWarn {
			t.Errorf("global group %s: partial_response_strategy %q", g.Name, g.PartialResponseStrategy)
		}
		for _, r := range g.Rules {
			if acrossClusters(r) {
				across++
			}
			if r.Alert != "" {
				if _, err := os.Stat(filepath.Join("..", RunbookDir, r.Alert+".md")); err != nil {
					t.Errorf("global alert %s: %v", r.Alert, err)
				}
			}
		}
	}
	if across < 5 {
		t.Errorf("only %d rules sum across clusters", across)
	}
}

// Without the partial-response field (Thanos' only addition), the global
// file is a valid Prometheus rule file: promtool checks it.
func TestGlobalRulesUnderPromtool(t *testing.T) {
	c := Default()
	gs := c.GlobalGroups()
	for i := range gs {
		gs[i].PartialResponseStrategy = ""
	}
	y, err := marshal(ruleFile{gs})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "global.yml")
	if err := os.WriteFile(p, y, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool.Path(t), "check", "rules", p).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}
