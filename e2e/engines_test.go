package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/goodput-exporter/goodput-exporter/mixin"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// formats are the simulator's exposition formats, one engine each.
var formats = []string{"vllm", "sglang", "llamacpp", "tgi", "triton", "trtllm", "dynamo"}

// dashPanel is one dashboard panel as shipped: its queries and the text
// Grafana shows when they return nothing.
type dashPanel struct {
	dashboard, row, title string
	exprs                 []string
	noValue               string
}

// shippedPanels reads every panel of dashboards/*.json.
func shippedPanels(t *testing.T) []dashPanel {
	paths, _ := filepath.Glob(filepath.Join("..", "dashboards", "*.json"))
	if len(paths) == 0 {
		t.Fatal("no dashboards")
	}
	var out []dashPanel
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Panels []struct {
				Type, Title string
				Targets     []struct{ Expr string }
				FieldConfig struct {
					Defaults struct {
						NoValue string `json:"noValue"`
					}
				} `json:"fieldConfig"`
			}
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		row := ""
		for _, p := range d.Panels {
			if p.Type == "row" {
				row = p.Title
				continue
			}
			dp := dashPanel{dashboard: filepath.Base(path), row: row, title: p.Title, noValue: p.FieldConfig.Defaults.NoValue}
			for _, tg := range p.Targets {
				dp.exprs = append(dp.exprs, tg.Expr)
			}
			out = append(out, dp)
		}
	}
	return out
}

// forTarget gives the dashboard's variables the values a user picking
// one target sets: $target that target, everything else All; a fleet
// panel (no $target) is read for the target's model.
func forTarget(expr, target, model string) string {
	fleet := !strings.Contains(expr, "$target")
	return templateVar.ReplaceAllStringFunc(expr, func(m string) string {
		switch strings.Trim(m, "${}") {
		case "__rate_interval", "__interval", "__range":
			return "1m"
		case "target":
			return promRegexp(target)
		case "model":
			if fleet {
				return promRegexp(model)
			}
		}
		return ".*"
	})
}

// promRegexp is a regexp matching s alone, inside a PromQL string.
func promRegexp(s string) string { return strings.ReplaceAll(regexp.QuoteMeta(s), `\`, `\\`) }

// Every dashboard panel, for a target of each of the simulator's formats
// picked alone, has data. The one healthy engine per format is scraped by
// one daemon into one Prometheus running the shipped rules.
func TestPanelsPerEngine(t *testing.T) {
	prometheus := need(t, "prometheus", "prometheus")
	dir := t.TempDir()
	begin := time.Now()
	var engines []engine
	for i, f := range formats {
		engines = append(engines, engine{name: fmt.Sprintf("%s-%d", f, i), format: f})
	}
	urls, gpus, _ := farm(t, "engines", engines, "--gpu.max-sm-clock")
	cfg := filepath.Join(dir, "node.yml")
	var b strings.Builder
	b.WriteString("targets:\n")
	for i, e := range engines {
		fmt.Fprintf(&b, "  - name: %s\n    url: %s\n    gpus: [\"%d\"]\n    namespace: inference\n    pod: %s\n    model: m-%s\n", e.name, urls[e.name], i, e.name, e.format)
	}
	fmt.Fprintf(&b, `slos:
  - name: chat
    objectives:
      ttft: { threshold: 1s, target: 0.95 }
      tpot: { threshold: 100ms, target: 0.9 }
      error: { target: 0.99 }
pricing:
  currency: USD
  gpu_hour: 2.5
diagnosis:
  window: %s
  baseline: %s
`, window, baseline/speed)
	write(t, cfg, b.String())
	_, inst := daemon(t, "daemon", cfg, gpus)
	rules := renderRules(t, dir, mixinConfig())
	promPort := freePort(t, 1)
	promCfg := filepath.Join(dir, "prometheus.yml")
	write(t, promCfg, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: ['%s']
scrape_configs:
  - job_name: goodput-exporter
    static_configs:
      - targets: ['%s']
        labels: { node: node-a }
`, strings.Join(rules, "', '"), inst))
	prom := start(t, "prometheus", prometheus, "--config.file="+promCfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort))
	p := promAPI{base: fmt.Sprintf("http://127.0.0.1:%d", promPort)}
	waitHTTP(t, prom, p.base+"/-/ready", 60*time.Second)
	start := time.Now()

	panels := shippedPanels(t)
	c := mixin.Default()
	// Each query of a panel (a line of it) is judged on its own.
	type key struct {
		panel, query int
		target       string
	}
	// Ask until every panel that can have data has it, or the deadline:
	// the hourly tiles (the budget left) come a scaled hour (a minute)
	// after the start. What each target can have is read again each
	// round, as the daemon's declarations settle.
	models := map[string]string{}
	has := map[key]bool{}
	var want, static map[key]mixin.Tri
	deadline := start.Add(150 * time.Second)
	for {
		for _, e := range engines {
			for _, s := range mustQuery(p, fmt.Sprintf(`group by (model) ({__name__=~"llm_.*", target=%q, model!=""})`, e.name)) {
				models[e.name] = s.Metric["model"]
			}
		}
		want, static = map[key]mixin.Tri{}, map[key]mixin.Tri{}
		ready := true
		for _, e := range engines {
			leaf, ok := runtimeLeaf(p, e)
			ready = ready && ok
			for i, pn := range panels {
				for j, q := range pn.exprs {
					k := key{i, j, e.name}
					var err error
					if want[k], err = c.Possible(q, leaf); err != nil {
						t.Fatalf("%s / %s: %v", pn.dashboard, pn.title, err)
					}
					static[k], _ = c.Possible(q, mixin.EngineLeaf(snapshot.Engine(e.format)))
				}
			}
		}
		missing := 0
		for i, pn := range panels {
			for j, q := range pn.exprs {
				for _, e := range engines {
					k := key{i, j, e.name}
					if has[k] {
						continue
					}
					res, err := p.queryRange(forTarget(q, e.name, models[e.name]), start, time.Now(), time.Second)
					if err != nil {
						t.Fatal(err)
					}
					for _, s := range res {
						has[k] = has[k] || len(s.Values) > 0
					}
					if !has[k] && want[k] == mixin.Yes {
						missing++
					}
				}
			}
		}
		if ready && missing == 0 || time.Now().After(deadline) {
			if !ready {
				t.Fatalf("the daemon never declared every mode and objective of every target")
			}
			break
		}
		time.Sleep(3 * time.Second)
	}
	counts := map[mixin.Tri]int{}
	for i, pn := range panels {
		for _, e := range engines {
			empty, static1 := true, mixin.No
			for j, q := range pn.exprs {
				k := key{i, j, e.name}
				where := fmt.Sprintf("%s / %s / %q, query %c, for %s", pn.dashboard, pn.row, pn.title, 'A'+j, e.name)
				counts[want[k]]++
				empty = empty && !has[k]
				static1 = max(static1, static[k])
				switch {
				case want[k] == mixin.Yes && !has[k]:
					t.Errorf("%s: no data, yet the engine exports what it reads\n  PromQL: %s", where, forTarget(q, e.name, models[e.name]))
				case want[k] == mixin.No && has[k]:
					t.Errorf("%s: data, yet the support matrix or the daemon's declarations say it cannot have any", where)
				}
			}
			// The whole panel empty: Grafana shows its text, which must
			// say why.
			where := fmt.Sprintf("%s / %s / %q for %s", pn.dashboard, pn.row, pn.title, e.name)
			switch {
			case !empty:
			case pn.noValue == "":
				t.Errorf("%s: silently empty: no unsupported text", where)
			case static1 == mixin.No && !strings.Contains(pn.noValue, e.format):
				t.Errorf("%s: empty as the support matrix says, but its text does not name %s: %q", where, e.format, pn.noValue)
			case static1 == mixin.Maybe && !strings.Contains(pn.noValue, "_supported = 0"):
				t.Errorf("%s: empty for a run-time reason its text does not give: %q", where, pn.noValue)
			}
		}
	}
	t.Logf("%d panels × %d engines, by query: %d with data expected, %d unsupported, %d depending on the SLO; took %v",
		len(panels), len(engines), counts[mixin.Yes], counts[mixin.No], counts[mixin.Maybe], time.Since(begin).Round(time.Second))
}

// runtimeLeaf is what the running daemon declares for engine e's target:
// contract series and classifier signals by the support matrix (current
// versions), verdicts by llm_failure_mode_supported, SLO series by
// llm_slo_supported (every objective measurable: yes; none: no).
func runtimeLeaf(p promAPI, e engine) (mixin.Leaf, bool) {
	static := mixin.EngineLeaf(snapshot.Engine(e.format))
	modes := map[string]bool{}
	for _, s := range mustQuery(p, fmt.Sprintf(`llm_failure_mode_supported{target=%q}`, e.name)) {
		modes[s.Metric["mode"]] = s.Values[0] == 1
	}
	var objectives, measurable int
	for _, s := range mustQuery(p, fmt.Sprintf(`llm_slo_supported{target=%q}`, e.name)) {
		objectives++
		if s.Values[0] == 1 {
			measurable++
		}
	}
	return func(name string, ms []*labels.Matcher) mixin.Tri {
		switch k, _ := mixin.KindOf(name); k {
		case mixin.Verdict:
			for _, m := range ms {
				if m.Name == "mode" && m.Type == labels.MatchEqual {
					if modes[m.Value] {
						return mixin.Yes
					}
					return mixin.No
				}
			}
			return mixin.Maybe
		case mixin.SLOSeries:
			switch measurable {
			case objectives:
				return mixin.Yes
			case 0:
				return mixin.No
			}
			return mixin.Maybe
		}
		return static(name, ms)
	}, len(modes) == 8 && objectives == 3
}
