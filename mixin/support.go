package mixin

import (
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/exporter"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Tri is whether a query can return data for a target: No, Maybe
// (it depends on the target's SLO or GPU backend, which the daemon
// declares at run time), Yes.
type Tri int8

const (
	No Tri = iota
	Maybe
	Yes
)

func (t Tri) String() string { return [...]string{"no", "maybe", "yes"}[t] }

// Leaf says whether a series the daemon exports (or Prometheus, or an
// alerting rule) can exist for a target.
type Leaf func(name string, ms []*labels.Matcher) Tri

// Kind is what a daemon series' presence depends on.
type Kind int8

const (
	// Always: the daemon's own series, the GPUs', llm_up, ALERTS.
	Always Kind = iota
	// Contract: an engine series, present where the engine exports it
	// (collector.Current).
	Contract
	// Signal: a classifier gauge, present where its inputs are
	// (exporter.SignalInputs).
	Signal
	// Verdict: llm_failure_mode, present where the mode is supported
	// (llm_failure_mode_supported).
	Verdict
	// SLOSeries: goodput and attainment counters, present where the
	// SLO's objectives can be measured (llm_slo_supported).
	SLOSeries
)

// histSuffix strips a histogram series' suffix from a contract name.
func contractName(name string) (string, bool) {
	sup := collector.Support(snapshot.VLLM)
	if _, ok := sup[name]; ok {
		return name, true
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, suf); ok {
			if _, ok := sup[b]; ok {
				return b, true
			}
		}
	}
	return "", false
}

// KindOf classifies a series the daemon exports by what its presence
// depends on; a contract series comes back under its base name.
func KindOf(name string) (Kind, string) {
	if b, ok := contractName(name); ok {
		return Contract, b
	}
	if _, ok := exporter.SignalInputs()[name]; ok {
		return Signal, name
	}
	switch {
	case name == "llm_failure_mode":
		return Verdict, name
	case name == "llm_slo_supported" || name == "llm_slo_target_ratio":
		return Always, name
	case strings.HasPrefix(name, "llm_goodput_") || strings.HasPrefix(name, "llm_slo_"):
		return SLOSeries, name
	}
	return Always, name
}

// SignalPossible is whether a classifier gauge can exist given which
// contract series the engine has.
func SignalPossible(name string, has func(string) bool) bool {
	alts := exporter.SignalInputs()[name]
	if alts == nil {
		return true
	}
	for _, all := range alts {
		ok := true
		for _, s := range all {
			ok = ok && has(s)
		}
		if ok {
			return true
		}
	}
	return false
}

// Possible evaluates whether expr can return data, given leaf for the
// series it reads: "a or b" can where either can, "a unless b" where a
// can, every other combination only where all its parts can. Recorded
// series are followed into the recording rules that produce them.
func (c Config) Possible(expr string, leaf Leaf) (Tri, error) {
	rec := map[string][]string{}
	for _, g := range c.RecordingGroups() {
		for _, r := range g.Rules {
			rec[r.Record] = append(rec[r.Record], r.Expr)
		}
	}
	p := parser.NewParser(parser.Options{})
	seen := map[string]bool{}
	var eval func(n parser.Node) (Tri, error)
	var evalRecorded func(name string) (Tri, error)
	evalRecorded = func(name string) (Tri, error) {
		if seen[name] {
			// One definition of a rule reading another of the same name
			// (the token window bound's lower side reads its upper side):
			// the other definitions are counted where the rule is read, so
			// this branch adds nothing.
			return No, nil
		}
		seen[name] = true
		defer delete(seen, name)
		best := No
		for _, e := range rec[name] {
			n, err := p.ParseExpr(e)
			if err != nil {
				return No, fmt.Errorf("%s: %w", name, err)
			}
			t, err := eval(n)
			if err != nil {
				return No, err
			}
			best = max(best, t)
		}
		return best, nil
	}
	all := func(ns ...parser.Node) (Tri, error) {
		out := Yes
		for _, n := range ns {
			t, err := eval(n)
			if err != nil {
				return No, err
			}
			out = min(out, t)
		}
		return out, nil
	}
	eval = func(n parser.Node) (Tri, error) {
		switch n := n.(type) {
		case *parser.VectorSelector:
			name := n.Name
			if name == "" {
				// {__name__=~"a|b"}: any of the names it can match.
				for _, m := range n.LabelMatchers {
					if m.Name == labels.MetricName {
						best := No
						for _, alt := range strings.Split(m.Value, "|") {
							if len(rec[alt]) > 0 {
								t, err := evalRecorded(alt)
								if err != nil {
									return No, err
								}
								best = max(best, t)
							} else {
								best = max(best, leaf(alt, n.LabelMatchers))
							}
						}
						return best, nil
					}
				}
				return Yes, nil
			}
			if len(rec[name]) > 0 {
				return evalRecorded(name)
			}
			return leaf(name, n.LabelMatchers), nil
		case *parser.MatrixSelector:
			return eval(n.VectorSelector)
		case *parser.NumberLiteral, *parser.StringLiteral:
			return Yes, nil
		case *parser.ParenExpr:
			return eval(n.Expr)
		case *parser.UnaryExpr:
			return eval(n.Expr)
		case *parser.StepInvariantExpr:
			return eval(n.Expr)
		case *parser.SubqueryExpr:
			return eval(n.Expr)
		case *parser.AggregateExpr:
			return eval(n.Expr)
		case *parser.Call:
			if n.Func.Name == "vector" {
				return Yes, nil
			}
			var args []parser.Node
			for _, a := range n.Args {
				args = append(args, a)
			}
			return all(args...)
		case *parser.BinaryExpr:
			switch n.Op {
			case parser.LOR:
				l, err := eval(n.LHS)
				if err != nil {
					return No, err
				}
				r, err := eval(n.RHS)
				return max(l, r), err
			case parser.LUNLESS:
				return eval(n.LHS)
			}
			return all(n.LHS, n.RHS)
		}
		return No, fmt.Errorf("unexpected %T in %s", n, n)
	}
	n, err := p.ParseExpr(dashboardValues.Replace(expr))
	if err != nil {
		return No, err
	}
	return eval(n)
}

// dashboardValues gives Grafana's variables a value for parsing.
var dashboardValues = strings.NewReplacer("$node", ".*", "$instance", ".*", "$namespace", ".*",
	"$target", ".*", "$model", ".*", "$slo", ".*")

// EngineLeaf is what engine e's current versions allow: contract series
// and signals by the support matrix, verdicts and SLO series Maybe.
func EngineLeaf(e snapshot.Engine) Leaf {
	cur := collector.Current(e)
	return func(name string, _ []*labels.Matcher) Tri {
		k, base := KindOf(name)
		switch k {
		case Contract:
			if cur[base] {
				return Yes
			}
			return No
		case Signal:
			if SignalPossible(base, func(s string) bool { return cur[s] }) {
				return Yes
			}
			return No
		case Verdict, SLOSeries:
			return Maybe
		}
		return Yes
	}
}

// reads says which kinds of daemon series a query reads (through
// recording rules), for the panel's "no data" text.
func (c Config) reads(expr string) map[Kind]bool {
	out := map[Kind]bool{}
	c.Possible(expr, func(name string, _ []*labels.Matcher) Tri {
		k, _ := KindOf(name)
		out[k] = true
		return Yes
	})
	return out
}

// noValue is the text a panel shows when its queries return nothing for
// the selected targets: which engines can never fill it (the support
// matrix, current versions) and which run-time declarations can empty
// it. "" for a panel every engine fills.
func (c Config) noValue(p Panel) string {
	var never, removed []string
	kinds := map[Kind]bool{}
	for _, e := range snapshot.Engines {
		best := No
		for _, q := range p.Exprs {
			t, err := c.Possible(q.Expr, EngineLeaf(e))
			if err != nil {
				panic(fmt.Sprintf("panel %q: %v", p.Title, err))
			}
			best = max(best, t)
		}
		if best == No {
			// Would an older version fill it?
			sup := collector.Support(e)
			old := No
			for _, q := range p.Exprs {
				t, _ := c.Possible(q.Expr, func(name string, ms []*labels.Matcher) Tri {
					if k, base := KindOf(name); k == Contract && sup[base] {
						return Yes
					}
					return EngineLeaf(e)(name, ms)
				})
				old = max(old, t)
			}
			if old != No {
				removed = append(removed, string(e))
			} else {
				never = append(never, string(e))
			}
		}
	}
	for _, q := range p.Exprs {
		for k := range c.reads(q.Expr) {
			kinds[k] = true
		}
	}
	var parts []string
	if len(never) > 0 {
		sort.Strings(never)
		parts = append(parts, "for "+strings.Join(never, ", ")+", whose engines do not export what it reads (docs/metrics.md, support matrix)")
	}
	if len(removed) > 0 {
		sort.Strings(removed)
		parts = append(parts, "for current "+strings.Join(removed, ", ")+" versions, which removed what it reads")
	}
	if kinds[Verdict] {
		parts = append(parts, "for a target that cannot be judged for the mode (llm_failure_mode_supported = 0)")
	}
	if kinds[SLOSeries] {
		parts = append(parts, "for objectives the target's engine cannot measure (llm_slo_supported = 0; goodput needs every objective of the SLO)")
	}
	if len(parts) == 0 {
		return ""
	}
	return "Unsupported, so no data: " + strings.Join(parts, "; ") + "."
}
