package mixin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/goodput-exporter/goodput-exporter/collector/gpu"
	"github.com/goodput-exporter/goodput-exporter/internal/docscheck"
	"github.com/goodput-exporter/goodput-exporter/internal/promtool"
)

// fromPrometheus are series Prometheus itself produces.
var fromPrometheus = []string{"up", "ALERTS"}

// fromExporterSource are the daemon's own series that no golden output
// pins (vectors empty until a target is scraped); each must appear as a
// string literal in exporter/*.go.
var fromExporterSource = []string{
	"goodput_exporter_target_scrape_duration_seconds",
	"goodput_exporter_config_last_reload_success_timestamp_seconds",
	// The live knee appears after minutes of varied traffic.
	"llm_capacity_headroom_ratio",
	// Needs a GPU backend that reports the maximum SM clock, which the
	// demo's dcgm-exporter does not.
	"llm_signal_gpu_sm_clock_ratio_baseline",
	"llm_capacity_knee_requests_per_second",
	"llm_capacity_load_levels",
}

// produced is every series name the daemon, Prometheus or the recording
// rules produce.
func produced(t *testing.T) map[string]string {
	t.Helper()
	// The daemon's pinned expositions (docscheck.GoldenExpositions).
	g, err := docscheck.ReadGolden("..")
	if err != nil {
		t.Fatal(err)
	}
	out := g.Samples
	// The GPU backend's series, from the descriptors it declares.
	ch := make(chan *prometheus.Desc, 64)
	gpu.NewManager(gpu.ManagerOptions{}).Describe(ch)
	close(ch)
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	n := 0
	for d := range ch {
		m := fq.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("descriptor %s", d)
		}
		out[m[1]] = "collector/gpu descriptors"
		n++
	}
	if n < 10 {
		t.Fatalf("only %d GPU descriptors", n)
	}
	src := ""
	paths, _ := filepath.Glob("../exporter/*.go")
	for _, p := range paths {
		if !strings.HasSuffix(p, "_test.go") {
			b, _ := os.ReadFile(p)
			src += string(b)
		}
	}
	for _, name := range fromExporterSource {
		if !strings.Contains(src, `"`+name+`"`) {
			t.Errorf("%s is not declared in exporter/*.go", name)
		}
		out[name] = "exporter source"
	}
	for _, name := range fromPrometheus {
		out[name] = "Prometheus"
	}
	for _, g := range Default().RecordingGroups() {
		for _, r := range g.Rules {
			out[r.Record] = "recording rule"
		}
	}
	return out
}

// queries is every PromQL expression the mixin ships, with where it is.
func queries(c Config) map[string]string {
	out := map[string]string{}
	for _, g := range append(c.RecordingGroups(), c.AlertGroups()...) {
		for _, r := range g.Rules {
			out[r.Expr] = g.Name + "/" + r.Record + r.Alert
			if r.Runbook != nil {
				for _, q := range r.Runbook.Confirm {
					// A runbook block holds one query per line.
					for _, line := range strings.Split(q.Expr, "\n") {
						out[line] = "runbook " + r.Alert
					}
				}
			}
		}
	}
	for _, d := range c.Dashboards() {
		for _, q := range d.Queries() {
			out[q] = "dashboard " + d.UID
		}
		for _, s := range d.VariableSelectors() {
			out[s] = "dashboard " + d.UID + " variable"
		}
	}
	return out
}

// dashboardVars replaces Grafana's variables by what Grafana sends for
// "All".
var dashboardVars = strings.NewReplacer("$cluster", ".*", "$node", ".*", "$instance", ".*", "$namespace", ".*",
	"$target", ".*", "$model", ".*", "$slo", ".*")

// Every query of the rules, alerts, runbooks and dashboards parses with
// Prometheus' own PromQL parser, and every series it reads is produced by
// the daemon (its golden outputs and declared series), by Prometheus, or
// by a recording rule: no query can match nothing for want of a name.
func TestEveryQueryParsesAndReadsProducedSeries(t *testing.T) {
	have := produced(t)
	p := parser.NewParser(parser.Options{})
	qs := queries(Default())
	if len(qs) < 100 {
		t.Fatalf("only %d queries", len(qs))
	}
	used := map[string]bool{}
	for q, where := range qs {
		expr, err := p.ParseExpr(dashboardVars.Replace(q))
		if err != nil {
			t.Errorf("%s: %q: %v", where, q, err)
			continue
		}
		n := 0
		parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
			vs, ok := node.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			n++
			names := []string{vs.Name}
			if vs.Name == "" {
				names = nil
				for _, m := range vs.LabelMatchers {
					if m.Name == labels.MetricName && m.Type == labels.MatchRegexp {
						// {__name__=~"llm_.*"}: some produced series must match.
						ok := false
						for h := range have {
							ok = ok || m.Matches(h)
						}
						if !ok {
							t.Errorf("%s: %q matches no produced series", where, m)
						}
					}
				}
			}
			for _, name := range names {
				used[name] = true
				if _, ok := have[name]; !ok {
					t.Errorf("%s: reads %s, which neither the daemon, Prometheus nor a recording rule produces", where, name)
				}
			}
			return nil
		})
		if n == 0 {
			t.Errorf("%s: %q reads no series", where, q)
		}
	}
	// The recording rules are all used by an alert, a dashboard or
	// another rule, except the fleet summaries, which are for ad hoc
	// queries and federation.
	var unused []string
	for name, from := range have {
		if from == "recording rule" && !used[name] && !strings.HasPrefix(name, "model:") && !strings.HasPrefix(name, "model_") {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("recording rules nothing reads: %v", unused)
	}
}

// The test above can fail: a name the daemon does not produce is caught.
func TestUnknownSeriesIsCaught(t *testing.T) {
	have := produced(t)
	for _, name := range []string{"vllm:num_preemptions_total", "llm_preemptions", "llm_failure_modes", "llm_signal_waiting"} {
		if _, ok := have[name]; ok {
			t.Errorf("%s counted as produced", name)
		}
	}
	for _, name := range []string{"llm_up", "llm_gpu_power_watts", "llm_slo_target_ratio", "llm_time_to_first_token_seconds_bucket",
		"goodput_exporter_gpu_backend_up", sloBurn("3d"), "llm_failure_mode", "llm_signal_waiting_slope", "llm_signal_decode_attainment_ratio"} {
		if _, ok := have[name]; !ok {
			t.Errorf("%s not counted as produced", name)
		}
	}
}

// Prometheus 2.42's promtool (Debian's) accepts every dashboard query too.
func TestDashboardQueriesUnderPromtool(t *testing.T) {
	bin := promtool.Path(t)
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard-queries\n    rules:\n")
	i := 0
	for _, d := range Default().Dashboards() {
		for _, q := range d.Queries() {
			fmt.Fprintf(&b, "      - record: dashboard:query_%d:check\n        expr: %q\n", i, dashboardVars.Replace(q))
			i++
		}
	}
	path := filepath.Join(t.TempDir(), "queries.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "check", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
}

// Every alert has a severity, a summary, a description and a runbook_url
// that resolves to its runbook in docs/runbooks.
func TestAlertsHaveRunbooks(t *testing.T) {
	c := Default()
	prefix := strings.TrimSuffix(c.RunbookURL, "%s.md")
	seen := map[string]bool{}
	for _, r := range c.Alerts() {
		if seen[r.Alert] {
			t.Errorf("alert %s defined twice", r.Alert)
		}
		seen[r.Alert] = true
		if s := r.Labels["severity"]; s != c.PageSeverity && s != c.TicketSeverity {
			t.Errorf("%s: severity %q", r.Alert, s)
		}
		for _, k := range []string{"summary", "description", "runbook_url"} {
			if r.Annotations[k] == "" {
				t.Errorf("%s: no %s", r.Alert, k)
			}
		}
		url := r.Annotations["runbook_url"]
		rel, ok := strings.CutPrefix(url, prefix)
		if !ok || rel != r.Alert+".md" {
			t.Errorf("%s: runbook_url %s", r.Alert, url)
			continue
		}
		body, err := os.ReadFile(filepath.Join("..", RunbookDir, rel))
		if err != nil {
			t.Errorf("%s: %v", r.Alert, err)
			continue
		}
		for _, h := range []string{"# " + r.Alert + "\n", "## What fired", "## What it means", "## How to confirm it", "## Remedies, in order", "```promql"} {
			if !strings.Contains(string(body), h) {
				t.Errorf("runbook of %s lacks %q", r.Alert, h)
			}
		}
	}
	// One alert per failure mode, and the engine and self alerts.
	for _, name := range []string{"LLMQueueGrowth", "LLMKVPreemption", "LLMPrefillInterference", "LLMKVMonopoly",
		"LLMPrefixCacheCollapse", "LLMDecodeSaturation", "LLMGPUThrottling", "LLMEngineStall",
		"LLMErrorBudgetBurn1h", "LLMErrorBudgetBurn6h", "LLMErrorBudgetBurn1d", "LLMErrorBudgetBurn3d",
		"LLMEngineDown", "LLMEngineSeriesAbsent", "LLMEngineNotServing",
		"GoodputExporterTargetScrapeErrors", "GoodputExporterConfigReloadFailed", "GoodputExporterGPUBackendDown",
		"GoodputExporterObjectiveUnmeasurable", "GoodputExporterAbsent"} {
		if !seen[name] {
			t.Errorf("no alert %s", name)
		}
	}
}

// The failure-mode alerts' for: is one classifier window (1m with the
// classifier's defaults: window 1m, enter 2, leave 3), so a mode pages
// 3m after its onset at the earliest: 2 windows to raise it, 1 to hold.
func TestFailureModeForFollowsHysteresis(t *testing.T) {
	c := Default()
	n := 0
	for _, r := range c.Alerts() {
		if strings.Contains(r.Expr, "llm_failure_mode{") {
			n++
			if r.For != "1m" {
				t.Errorf("%s: for %s, want 1m", r.Alert, r.For)
			}
		}
	}
	if n != 8 {
		t.Errorf("%d failure-mode alerts, want 8", n)
	}
	c.DiagnosisWindow = 90e9
	if got := c.FailureModeFor(); got != "1m30s" {
		t.Errorf("a 90s window gives for: %s, want 1m30s", got)
	}
}

// Stat panels read 0, not "No data", when the answer is zero; every
// panel reads its data source from the variable.
func TestDashboardStatsReadZero(t *testing.T) {
	n := 0
	for _, d := range Default().Dashboards() {
		for _, r := range d.Rows {
			for _, p := range r.Panels {
				for _, q := range p.Exprs {
					if p.Stat {
						n++
						if !strings.HasSuffix(q.Expr, " or on () vector(0)") {
							t.Errorf("%s/%s: stat query %q can show No data", d.UID, p.Title, q.Expr)
						}
					}
				}
			}
		}
	}
	if n < 10 {
		t.Errorf("%d stat queries", n)
	}
}

var dashboardVar = regexp.MustCompile(`\$([a-z_]+)`)

var sloName = regexp.MustCompile(`(^|_)slo[_:]`)

// sloSeries reports whether a series has an slo label (llm_slo_*, the
// recorded *_slo_*:…, the goodput counters, the burn-rate alerts).
func sloSeries(name string) bool {
	return sloName.MatchString(name) || strings.HasPrefix(name, "llm_goodput_") || name == "ALERTS"
}

// Every dashboard is templated on the data source, node, daemon,
// namespace, target and model (and SLO where it shows SLO series), and
// applies them consistently: a panel of engine targets filters on all of
// them (the SLO where its series have one), a panel of daemons on node and
// daemon, a fleet panel on model (and SLO); every variable a query uses
// is declared, and every declared one is used.
func TestDashboardVariablesAppliedEverywhere(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	for _, d := range Default().Dashboards() {
		declared := map[string]bool{}
		for _, v := range d.Variables() {
			declared[v] = true
		}
		for _, v := range []string{"datasource", "node", "instance", "namespace", "target", "model"} {
			if !declared[v] {
				t.Errorf("%s: no variable %s", d.UID, v)
			}
		}
		used := map[string]bool{"datasource": true}
		readsSLO := false
		for _, r := range d.Rows {
			for _, pn := range r.Panels {
				for _, q := range pn.Exprs {
					refs := map[string]bool{}
					for _, m := range dashboardVar.FindAllStringSubmatch(q.Expr, -1) {
						refs[m[1]] = true
						used[m[1]] = true
						if !declared[m[1]] {
							t.Errorf("%s/%s: uses $%s, which the dashboard does not declare", d.UID, pn.Title, m[1])
						}
					}
					expr, err := p.ParseExpr(dashboardVars.Replace(q.Expr))
					if err != nil {
						t.Errorf("%s/%s: %v", d.UID, pn.Title, err)
						continue
					}
					slo := false
					parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
						if vs, ok := node.(*parser.VectorSelector); ok && sloSeries(vs.Name) {
							slo = true
						}
						return nil
					})
					readsSLO = readsSLO || slo
					var want []string
					switch pn.Scope {
					case PerTarget:
						want = []string{"node", "instance", "namespace", "target", "model"}
					case PerDaemon:
						want = []string{"node", "instance"}
					case Fleet:
						want = []string{"model"}
					}
					if slo && pn.Scope != PerDaemon {
						want = append(want, "slo")
					}
					for _, v := range want {
						if !refs[v] {
							t.Errorf("%s/%s: %q ignores $%s", d.UID, pn.Title, q.Expr, v)
						}
					}
				}
			}
		}
		if readsSLO && !declared["slo"] {
			t.Errorf("%s: shows SLO series but has no slo variable", d.UID)
		}
		for v := range declared {
			if !used[v] {
				t.Errorf("%s: variable %s is declared but no panel uses it", d.UID, v)
			}
		}
	}
}

// The variables check above can fail: a panel that ignores a variable, or
// uses one its dashboard lacks, is caught.
func TestDashboardVariablesCheckCatches(t *testing.T) {
	ok := func(expr string) bool {
		refs := map[string]bool{}
		for _, m := range dashboardVar.FindAllStringSubmatch(expr, -1) {
			refs[m[1]] = true
		}
		return refs["node"] && refs["instance"] && refs["namespace"] && refs["target"] && refs["model"]
	}
	c := Default()
	if ok(`llm_gpu_power_watts{` + c.fDaemon() + `}`) {
		t.Error("a GPU series filtered by node and daemon only passes as a per-target panel")
	}
	if !ok(c.onGPUs("llm_gpu_power_watts")) || !ok(c.inSelected("x{"+c.fRecorded()+"}")) {
		t.Error("the joins do not carry every variable")
	}
}

// The failure-modes dashboard has one row per mode, in the classifier's
// order: the verdict of that mode first, then the signals its rule reads;
// every llm_signal_* gauge the daemon exports is shown in some row.
func TestFailureModeRows(t *testing.T) {
	have := produced(t)
	var d Dashboard
	for _, x := range Default().Dashboards() {
		if x.UID == "goodput-failure-modes" {
			d = x
		}
	}
	if len(d.Rows) != len(FailureModes) {
		t.Fatalf("%d rows, want one per mode (%d)", len(d.Rows), len(FailureModes))
	}
	p := parser.NewParser(parser.Options{})
	shown := map[string]bool{}
	for i, r := range d.Rows {
		mode := FailureModes[i]
		if r.Title != mode {
			t.Errorf("row %d is %q, want %q", i, r.Title, mode)
		}
		if len(r.Panels) < 4 || !strings.Contains(r.Panels[0].Exprs[0].Expr, `llm_failure_mode{`) ||
			!strings.Contains(r.Panels[0].Exprs[0].Expr, `mode="`+mode+`"`) {
			t.Errorf("row %s: the verdict of the mode first and at least two signals, got %d panels", mode, len(r.Panels))
		}
		thresholds := 0
		for _, pn := range r.Panels[2:] {
			if pn.Threshold != nil {
				thresholds++
			}
			for _, q := range pn.Exprs {
				expr, err := p.ParseExpr(dashboardVars.Replace(q.Expr))
				if err != nil {
					t.Fatal(err)
				}
				parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
					if vs, ok := n.(*parser.VectorSelector); ok {
						shown[vs.Name] = true
					}
					return nil
				})
			}
		}
		if thresholds < 2 {
			t.Errorf("row %s: %d signals drawn against the classifier's threshold, want at least 2", mode, thresholds)
		}
	}
	n := 0
	for name := range have {
		if strings.HasPrefix(name, "llm_signal_") {
			n++
			if !shown[name] {
				t.Errorf("%s is shown in no failure-mode row", name)
			}
		}
	}
	if n != 14 {
		t.Errorf("%d llm_signal_* series produced, want the daemon's 14", n)
	}
}
