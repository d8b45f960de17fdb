package mixin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/goodput-exporter/goodput-exporter/internal/promtool"
)

// attainmentRules are the attainment rules of every window, per target
// and for the fleet.
func attainmentRules(c Config) []string {
	var out []string
	for _, w := range c.Windows {
		out = append(out, sloAttainment(w))
	}
	return append(out, "model_slo_objective:llm_slo_attainment:ratio_rate5m", "model_slo_objective:llm_slo_attainment:ratio_rate1h")
}

// recorders maps each recorded series to the rules that record it.
func recorders(groups []Group) map[string][]Rule {
	out := map[string][]Rule{}
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				out[r.Record] = append(out[r.Record], r)
			}
		}
	}
	return out
}

// Each window's attainment is one expression that reads good and judged
// from the same samples: either both raw counters in that expression, or
// one recorded series with an outcome label, written by a single rule
// whose own query reads both raw counters (or another such series), so
// that good and judged land in one commit. Two rules (one for good, one
// for judged, as before) would let a scrape committed between them skew
// the ratio; this test fails if any window goes back to that.
func TestAttainmentIsOneQuery(t *testing.T) {
	c := Default()
	rec := recorders(c.RecordingGroups())
	p := parser.NewParser(parser.Options{})
	// selectors returns the series an expression reads, with the outcome
	// each selector asks for ("" when it does not say).
	selectors := func(q string) map[string]map[string]bool {
		expr, err := p.ParseExpr(q)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		out := map[string]map[string]bool{}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			o := ""
			for _, m := range vs.LabelMatchers {
				if m.Name == "outcome" && m.Type == labels.MatchEqual {
					o = m.Value
				}
			}
			if out[vs.Name] == nil {
				out[vs.Name] = map[string]bool{}
			}
			out[vs.Name][o] = true
			return nil
		})
		return out
	}
	raw := func(s map[string]map[string]bool) bool {
		return s["llm_slo_requests_total"] != nil && s["llm_slo_good_requests_total"] != nil
	}
	// oneCommit: series name is recorded by exactly one rule, whose query
	// reads both raw counters or one such series whole.
	var oneCommit func(name string, depth int) bool
	oneCommit = func(name string, depth int) bool {
		rs := rec[name]
		if len(rs) != 1 || depth > 3 {
			return false
		}
		s := selectors(rs[0].Expr)
		if raw(s) {
			return true
		}
		if len(s) != 1 {
			return false
		}
		for src, o := range s {
			return !o["good"] && !o["judged"] && oneCommit(src, depth+1)
		}
		return false
	}
	for _, name := range attainmentRules(c) {
		rs := rec[name]
		if len(rs) != 1 {
			t.Errorf("%s: %d rules record it", name, len(rs))
			continue
		}
		s := selectors(rs[0].Expr)
		switch {
		case raw(s):
			if len(s) != 2 {
				t.Errorf("%s reads more than the two raw counters: %v", name, s)
			}
		case len(s) == 1:
			for src, o := range s {
				if !o["good"] || !o["judged"] || len(o) != 2 {
					t.Errorf("%s: reads %s for outcomes %v, want good and judged", name, src, o)
				}
				if !oneCommit(src, 0) {
					t.Errorf("%s: %s, which it reads, is not recorded by one rule from one query over good and judged", name, src)
				}
			}
		default:
			t.Errorf("%s reads good and judged from different series: %v", name, s)
		}
	}
}

// unclamp removes atMostOne from a rule's expression.
func unclamp(t *testing.T, expr string) string {
	t.Helper()
	const head, tail = "clamp_max(\n  ", ",\n  1\n)\n"
	if !strings.HasPrefix(expr, head) || !strings.HasSuffix(expr, tail) {
		t.Fatalf("not capped by atMostOne: %s", expr)
	}
	return strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(expr, head), tail), "\n  ", "\n") + "\n"
}

// The cap at 1 is needed on every window (atMostOne says why), and
// rules/tests/clamp_test.yml shows it: without the cap on any one window,
// that test fails.
func TestClampNeededOnEveryWindow(t *testing.T) {
	bin := promtool.Path(t)
	test, err := os.ReadFile("../rules/tests/clamp_test.yml")
	if err != nil {
		t.Fatal(err)
	}
	c := Default()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tests", "clamp_test.yml"), test, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(groups []Group) ([]byte, error) {
		y, err := marshal(ruleFile{groups})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "goodput.rules.yml"), y, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "test", "rules", "tests/clamp_test.yml")
		cmd.Dir = dir
		return cmd.CombinedOutput()
	}
	if out, err := run(c.RecordingGroups()); err != nil {
		t.Fatalf("with every cap: %v\n%s", err, out)
	}
	for _, name := range attainmentRules(c) {
		groups := c.RecordingGroups()
		found := false
		for gi := range groups {
			rules := append([]Rule(nil), groups[gi].Rules...)
			for ri := range rules {
				if rules[ri].Record == name {
					rules[ri].Expr = unclamp(t, rules[ri].Expr)
					found = true
				}
			}
			groups[gi].Rules = rules
		}
		if !found {
			t.Fatalf("no rule %s", name)
		}
		if out, err := run(groups); err == nil {
			t.Errorf("without the cap on %s, clamp_test.yml still passes:\n%s", name, out)
		}
	}
}
