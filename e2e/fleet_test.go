package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/goodput-exporter/goodput-exporter/mixin"
)

// The fleet suite (make test-fleet, docs/e2e.md): the mixin on Thanos.
// Two clusters on loopback, east and west, each of two nodes (a farm of
// simulated engines and a daemon per node); east is an HA pair of
// Prometheus servers (external labels cluster and replica), west one
// Prometheus; a Thanos Sidecar per Prometheus, Thanos Query
// deduplicating on replica, Thanos Ruler evaluating the global groups
// through Query, and one Alertmanager with the mixin's inhibit rules.
// It runs only where GOODPUT_THANOS names a thanos binary (the Makefile
// builds v0.42.3 from the module proxy into its cache).
//
// GOODPUT_FLEET_MUTANT breaks the setup on purpose, so that
// make test-fleet-mutants can show each assertion failing:
//   - cluster: a global rule and a dashboard query drop the cluster label;
//   - dedup: the HA pair without deduplication (Query has no replica
//     label, the alerts keep it);
//   - global: the global groups in the per-cluster rule files too.
var fleetMutant = os.Getenv("GOODPUT_FLEET_MUTANT")

// fleetNode is one node: its cluster, name and engines.
type fleetNode struct {
	cluster, name string
	engines       []engine
}

// The faults: east's kv_preemption (paged by the HA pair: once), west's
// overload (queue_growth for ever from one simulated minute: its
// failure-mode page, and the error budget of the model every engine
// serves burning across the fleet, which Thanos Ruler alerts on).
var fleetNodes = []fleetNode{
	{"east", "east-1", []engine{{name: "vllm-0", format: "vllm"}, {"vllm-1", "vllm", "kv_preemption", onset, 10 * time.Minute, "LLMKVPreemption"}}},
	{"east", "east-2", []engine{{name: "vllm-0", format: "vllm"}}},
	{"west", "west-1", []engine{{name: "sglang-0", format: "sglang"}, {"sglang-1", "sglang", "queue_growth", time.Minute, 0, "LLMQueueGrowth"}}},
	{"west", "west-2", []engine{{name: "sglang-0", format: "sglang"}}},
}

// fleetPages are the pages the faults must raise, each exactly once.
var fleetPages = []struct{ alert, cluster, node, target string }{
	{"LLMKVPreemption", "east", "east-1", "vllm-1"},
	{"LLMQueueGrowth", "west", "west-1", "sglang-1"},
}

type fleetWorld struct {
	query, ruler, am promAPI
	// proms: each Prometheus by name (east-0, east-1, west-0).
	proms map[string]promAPI
	hook  *webhook
	start time.Time
	c     mixin.Config
	procs []*proc
}

func thanosBinary(t *testing.T) string {
	b := os.Getenv("GOODPUT_THANOS")
	if b == "" {
		t.Skip("the fleet suite needs GOODPUT_THANOS (make test-fleet builds it)")
	}
	return b
}

// fleetConfig is the mixin as e2e runs it (time compressed), with the
// mutant's change where one is asked for.
func fleetConfig() mixin.Config { return mixinConfig() }

func fleetSetup(t *testing.T) *fleetWorld {
	thanos := thanosBinary(t)
	prometheus := need(t, "prometheus", "prometheus")
	dir := t.TempDir()
	w := &fleetWorld{start: time.Now(), hook: &webhook{}, proms: map[string]promAPI{}, c: fleetConfig()}

	// Nodes: a farm and a daemon each, scraped by their cluster's Prometheus.
	targets := map[string][]string{}
	for _, n := range fleetNodes {
		urls, gpus, f := farm(t, "engines-"+n.name, n.engines)
		cfg := filepath.Join(dir, n.name+".yml")
		slo := sloA
		if n.engines[0].format == "sglang" {
			slo = sloB
		}
		daemonConfig(t, cfg, n.engines, urls, nil, slo)
		d, addr := daemon(t, "daemon-"+n.name, cfg, gpus)
		w.procs = append(w.procs, f, d)
		targets[n.cluster] = append(targets[n.cluster], fmt.Sprintf("      - targets: ['%s']\n        labels: { node: %s }\n", addr, n.name))
	}

	hook := httptest.NewServer(w.hook)
	t.Cleanup(hook.Close)
	files, err := w.c.Files()
	if err != nil {
		t.Fatal(err)
	}
	am, amBase := startAlertmanager(t, dir, hook.URL, files[mixin.InhibitFile])
	w.am = promAPI{base: amBase}

	// The per-cluster rule files, and the global one for the Ruler.
	var rules []string
	for _, p := range []string{mixin.RulesFile, mixin.AlertsFile} {
		path := filepath.Join(dir, filepath.Base(p))
		write(t, path, string(files[p]))
		rules = append(rules, path)
	}
	global := w.c.GlobalGroups()
	if fleetMutant == "cluster" {
		// The cluster's cost summed as if the clusters were one.
		for i, r := range global[0].Rules {
			if r.Record == "cluster_currency:llm_engine_hourly_cost:sum" {
				global[0].Rules[i].Expr = strings.Replace(r.Expr, "sum by (cluster, currency)", "sum by (currency)", 1)
			}
		}
	}
	globalPath := filepath.Join(dir, "global.yml")
	writeYAML(t, globalPath, map[string]any{"groups": global})
	if fleetMutant == "global" {
		// The global groups loaded by every Prometheus as well: each
		// computes its own cluster's "global" sums.
		strip := append([]mixin.Group{}, global...)
		for i := range strip {
			strip[i].PartialResponseStrategy = ""
		}
		p := filepath.Join(dir, "global-in-cluster.yml")
		writeYAML(t, p, map[string]any{"groups": strip})
		rules = append(rules, p)
	}

	// The Prometheus servers and their sidecars.
	var storeAddrs []string
	for _, s := range []struct{ cluster, replica string }{{"east", "0"}, {"east", "1"}, {"west", "0"}} {
		name := s.cluster + "-" + s.replica
		// The HA pair's alerts differ only by replica: dropped, they are
		// one alert to Alertmanager.
		relabel := "  alert_relabel_configs:\n    - action: labeldrop\n      regex: replica\n"
		if fleetMutant == "dedup" {
			relabel = ""
		}
		cfg := filepath.Join(dir, "prometheus-"+name+".yml")
		write(t, cfg, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
  external_labels: { cluster: %s, replica: "%s" }
alerting:
%s  alertmanagers:
    - static_configs:
        - targets: ['%s']
rule_files: ['%s']
scrape_configs:
  - job_name: goodput-exporter
    static_configs:
%s`, s.cluster, s.replica, relabel, strings.TrimPrefix(w.am.base, "http://"),
			strings.Join(rules, "', '"), strings.Join(targets[s.cluster], "")))
		port := freePort(t, 1)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		p := start(t, "prometheus-"+name, prometheus, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb-"+name),
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--rules.alert.resend-delay=1s",
			"--storage.tsdb.min-block-duration=2h", "--storage.tsdb.max-block-duration=2h")
		waitHTTP(t, p, base+"/-/ready", 60*time.Second)
		w.proms[name] = promAPI{base: base}
		grpc, http := freePort(t, 1), freePort(t, 1)
		sc := start(t, "sidecar-"+name, thanos, "sidecar", "--prometheus.url="+base, "--tsdb.path="+filepath.Join(dir, "tsdb-"+name),
			fmt.Sprintf("--grpc-address=127.0.0.1:%d", grpc), fmt.Sprintf("--http-address=127.0.0.1:%d", http))
		waitHTTP(t, sc, fmt.Sprintf("http://127.0.0.1:%d/-/ready", http), 60*time.Second)
		storeAddrs = append(storeAddrs, fmt.Sprintf("127.0.0.1:%d", grpc))
		w.procs = append(w.procs, p, sc)
	}

	// Thanos Ruler (its own StoreAPI is an endpoint of Query) and Query.
	qHTTP, qGRPC, rHTTP, rGRPC := freePort(t, 1), freePort(t, 1), freePort(t, 1), freePort(t, 1)
	qArgs := []string{thanos, "query", fmt.Sprintf("--http-address=127.0.0.1:%d", qHTTP), fmt.Sprintf("--grpc-address=127.0.0.1:%d", qGRPC),
		fmt.Sprintf("--endpoint=127.0.0.1:%d", rGRPC), "--query.lookback-delta=5m"}
	for _, a := range storeAddrs {
		qArgs = append(qArgs, "--endpoint="+a)
	}
	if fleetMutant != "dedup" {
		qArgs = append(qArgs, "--query.replica-label=replica")
	}
	q := start(t, "query", qArgs...)
	w.query = promAPI{base: fmt.Sprintf("http://127.0.0.1:%d", qHTTP)}
	waitHTTP(t, q, w.query.base+"/-/ready", 60*time.Second)
	r := start(t, "ruler", thanos, "rule", "--data-dir="+filepath.Join(dir, "ruler"), "--rule-file="+globalPath,
		fmt.Sprintf("--query=127.0.0.1:%d", qHTTP), "--alertmanagers.url="+w.am.base, "--resend-delay=1s",
		`--label=rule_replica="0"`, "--alert.label-drop=rule_replica",
		fmt.Sprintf("--http-address=127.0.0.1:%d", rHTTP), fmt.Sprintf("--grpc-address=127.0.0.1:%d", rGRPC))
	w.ruler = promAPI{base: fmt.Sprintf("http://127.0.0.1:%d", rHTTP)}
	waitHTTP(t, r, w.ruler.base+"/-/ready", 60*time.Second)
	w.procs = append(w.procs, am, q, r)
	return w
}

func writeYAML(t *testing.T, path string, v any) {
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, string(b))
}

func (w *fleetWorld) logs() string {
	var b strings.Builder
	for _, p := range w.procs {
		b.WriteString(p.tail() + "\n")
	}
	return b.String()
}

func TestFleetOnThanos(t *testing.T) {
	w := fleetSetup(t)
	// The faults page within firedBy of their onset (3 simulated
	// minutes); the fleet's 1h window (a minute here) fills with the
	// overload's burn by then too.
	deadline := time.Now().Add(wall(onset) + firedBy + 60*time.Second)
	for time.Now().Before(deadline) && !w.allPaged() {
		time.Sleep(2 * time.Second)
	}
	// Let the HA pair's second replica send its copy too.
	time.Sleep(5 * time.Second)
	t.Run("pages once", w.checkPagesOnce)
	t.Run("recording rules through Query", w.checkRecordedThroughQuery)
	t.Run("global rules from Ruler", w.checkGlobalRules)
	t.Run("dashboards per cluster", w.checkFleetDashboards)
	if t.Failed() {
		t.Logf("process logs:\n%s", w.logs())
	}
}

func (w *fleetWorld) allPaged() bool {
	for _, p := range fleetPages {
		if len(w.pagesOf(p.alert, p.cluster, p.target)) == 0 {
			return false
		}
	}
	return true
}

func (w *fleetWorld) pagesOf(alert, cluster, target string) []notification {
	return w.hook.find(func(n notification) bool {
		return n.Status == "firing" && n.Labels["alertname"] == alert && n.Labels["cluster"] == cluster && n.Labels["target"] == target
	})
}

// Each fault pages once: its alert is one alert (one label set) in
// Alertmanager, the HA pair's two copies deduplicated, and no alert keeps
// the replica label; every alert names its cluster, in its labels and
// its description. The inhibit rules
// hold across the global layer: the fleet's burn ticket, sent by Thanos
// Ruler, is suppressed by a target's burn page, sent by a cluster's
// Prometheus. (Here the burn alerts' windows run 60 times faster than
// the classifier's, so a target's burn page comes before its failure
// mode's, as in e2e_test.go: that inhibition is not asked for.)
func (w *fleetWorld) checkPagesOnce(t *testing.T) {
	for _, p := range fleetPages {
		if len(w.pagesOf(p.alert, p.cluster, p.target)) == 0 {
			t.Errorf("%s on %s/%s: never paged", p.alert, p.cluster, p.target)
		}
	}
	sets := map[string]map[string]bool{}
	for _, n := range w.hook.find(func(n notification) bool { return n.Status == "firing" }) {
		if _, ok := n.Labels["replica"]; ok {
			t.Errorf("an alert keeps the replica label (two pages per HA pair): %v", n.Labels)
		}
		if n.Labels["alertname"] != mixin.FleetBurnAlert && n.Labels["cluster"] == "" {
			t.Errorf("an alert does not name its cluster: %v", n.Labels)
		}
		// The description names it too: the Prometheus that evaluated
		// the alert has it only as an external label.
		if c := n.Labels["cluster"]; c != "" && !strings.HasPrefix(n.Annotations["description"], "Cluster "+c+": ") {
			t.Errorf("%s: description does not begin with its cluster %s: %q", n.Labels["alertname"], c, n.Annotations["description"])
		}
		k := n.Labels["alertname"] + " " + n.Labels["cluster"] + "/" + n.Labels["node"] + "/" + n.Labels["target"] + " " +
			n.Labels["slo"] + "/" + n.Labels["objective"]
		if sets[k] == nil {
			sets[k] = map[string]bool{}
		}
		sets[k][labelKey(n.Labels)] = true
	}
	for k, s := range sets {
		if len(s) != 1 {
			t.Errorf("%s: paged as %d distinct alerts, want 1: %v", k, len(s), s)
		}
	}
	t.Logf("%d alerts paged, each once", len(sets))
	resp, err := http.Get(w.am.base + "/api/v2/alerts?filter=alertname%3D%22" + mixin.FleetBurnAlert + "%22")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var am []struct {
		Labels map[string]string
		Status struct {
			State       string
			InhibitedBy []string
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&am); err != nil {
		t.Fatal(err)
	}
	if len(am) == 0 {
		t.Errorf("%s never reached Alertmanager from the Ruler", mixin.FleetBurnAlert)
	}
	for _, a := range am {
		if a.Status.State != "suppressed" || len(a.Status.InhibitedBy) == 0 {
			t.Errorf("%s %v: %s, not inhibited by the targets' burn pages", mixin.FleetBurnAlert, a.Labels, a.Status.State)
		}
	}
	if n := w.hook.find(func(n notification) bool { return n.Labels["alertname"] == mixin.FleetBurnAlert }); len(n) > 0 {
		t.Errorf("%s notified despite the targets' burn pages: %v", mixin.FleetBurnAlert, n)
	}
}

func labelKey(m map[string]string) string {
	var ks []string
	for k, v := range m {
		ks = append(ks, k+"="+v)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

// rawSamples reads the raw samples of sel over the last rng at at.
func rawSamples(p promAPI, sel string, at time.Time, rng string) ([]series, error) {
	data, err := p.get("/api/v1/query", map[string][]string{"query": {sel + "[" + rng + "]"}, "time": {fmt.Sprint(at.Unix())}})
	if err != nil {
		return nil, err
	}
	return decode(data)
}

// Every recording rule read through Thanos Query equals what the
// Prometheus that recorded it holds, to the sample: west's (one
// Prometheus) series for series, sample for sample; east's deduplicated
// into one series per label set, each sample one of the two replicas'.
func (w *fleetWorld) checkRecordedThroughQuery(t *testing.T) {
	at := time.Now().Add(-5 * time.Second)
	checked := 0
	for _, g := range w.c.RecordingGroups() {
		for _, r := range g.Rules {
			viaQ := map[string]series{}
			qs, err := rawSamples(w.query, r.Record, at, "20s")
			if err != nil {
				t.Fatalf("%s through Query: %v", r.Record, err)
			}
			for _, s := range qs {
				k := labelKey(s.Metric)
				if _, dup := viaQ[k]; dup {
					t.Errorf("%s: two series %s through Query", r.Record, k)
				}
				if _, ok := s.Metric["replica"]; ok {
					t.Errorf("%s: %s keeps the replica label through Query (no deduplication)", r.Record, k)
				}
				viaQ[k] = s
			}
			for _, cl := range []string{"east", "west"} {
				own := map[string][]series{}
				for name, p := range w.proms {
					if !strings.HasPrefix(name, cl+"-") {
						continue
					}
					ss, err := rawSamples(p, r.Record, at, "20s")
					if err != nil {
						t.Fatalf("%s on %s: %v", r.Record, name, err)
					}
					for _, s := range ss {
						s.Metric["cluster"] = cl
						own[labelKey(s.Metric)] = append(own[labelKey(s.Metric)], s)
					}
				}
				for k, reps := range own {
					q, ok := viaQ[k]
					if !ok {
						t.Errorf("%s: %s recorded in %s, absent through Query", r.Record, k, cl)
						continue
					}
					checked++
					known := map[int64]map[float64]bool{}
					for _, s := range reps {
						for i, ts := range s.Times {
							if known[ts.UnixMilli()] == nil {
								known[ts.UnixMilli()] = map[float64]bool{}
							}
							known[ts.UnixMilli()][s.Values[i]] = true
						}
					}
					for i, ts := range q.Times {
						if !known[ts.UnixMilli()][q.Values[i]] && !(math.IsNaN(q.Values[i])) {
							t.Errorf("%s %s: sample %v=%g through Query is no sample of %s's Prometheus", r.Record, k, ts, q.Values[i], cl)
							break
						}
					}
					if len(reps) == 1 && len(q.Times) != len(reps[0].Times) {
						t.Errorf("%s %s: %d samples through Query, %d in %s's Prometheus", r.Record, k, len(q.Times), len(reps[0].Times), cl)
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d recorded series compared", checked)
	}
	t.Logf("%d recorded series compared sample by sample", checked)
}

// The global rules run in Thanos Ruler: each has samples (read through
// Query, the Ruler being one of its endpoints), and each equals its own
// expression evaluated through Query at the sample's time; those that
// keep the cluster equal, for west, the same expression on west's one
// Prometheus; those that sum across clusters carry no cluster label. The
// fleet's burn alert fires from the Ruler.
func (w *fleetWorld) checkGlobalRules(t *testing.T) {
	exprs := map[string]string{}
	for _, g := range w.c.GlobalGroups() {
		for _, r := range g.Rules {
			if r.Record != "" {
				exprs[r.Record] = r.Expr
			}
		}
	}
	// Inline the rules a rule reads that only the Ruler records.
	inline := func(e string) string {
		for name, x := range exprs {
			if strings.HasPrefix(name, "cluster_currency") {
				e = strings.ReplaceAll(e, name, "("+strings.TrimSpace(x)+")")
			}
		}
		return e
	}
	compared := 0
	for name, expr := range exprs {
		compared++
		got, err := w.query.query(name)
		if err != nil || len(got) == 0 {
			t.Errorf("global rule %s: no series through Query (%v)", name, err)
			continue
		}
		for _, s := range got {
			if _, ok := s.Metric["cluster"]; ok == !strings.HasPrefix(name, "cluster_") {
				t.Errorf("global rule %s: series %v (a global_ rule has no cluster, a cluster_ rule one)", name, s.Metric)
			}
		}
		ts, err := w.query.query("timestamp(" + name + ")")
		if err != nil || len(ts) == 0 {
			t.Errorf("%s: timestamp: %v", name, err)
			continue
		}
		at := time.UnixMilli(int64(ts[0].Values[0] * 1000))
		recorded, _ := w.query.get("/api/v1/query", map[string][]string{"query": {name}, "time": {fmt.Sprintf("%.3f", float64(at.UnixMilli())/1000)}})
		rec, _ := decode(recorded)
		again, err := queryAt(w.query, expr, at)
		if err != nil {
			t.Errorf("%s through Query: %v", name, err)
			continue
		}
		if d := sameVectors(rec, again, nil); d != "" {
			t.Errorf("%s: Ruler's samples at %v differ from its expression through Query: %s", name, at, d)
		}
		if strings.HasPrefix(name, "cluster_") {
			west, err := queryAt(w.proms["west-0"], inline(expr), at)
			if err != nil {
				t.Errorf("%s on west's Prometheus: %v", name, err)
				continue
			}
			var ruled []series
			for _, s := range rec {
				if s.Metric["cluster"] == "west" {
					ruled = append(ruled, s)
				}
			}
			if d := sameVectors(ruled, west, []string{"cluster", "__name__"}); d != "" {
				t.Errorf("%s: Ruler's west samples differ from the same rule on west's Prometheus: %s", name, d)
			}
		}
	}
	t.Logf("%d global rules compared", compared)
	data, err := w.ruler.get("/api/v1/alerts", nil)
	if err != nil {
		t.Fatal(err)
	}
	var alerts struct {
		Alerts []struct {
			Labels map[string]string
			State  string
		}
	}
	json.Unmarshal(data, &alerts)
	fired := false
	for _, a := range alerts.Alerts {
		fired = fired || (a.Labels["alertname"] == mixin.FleetBurnAlert && a.State == "firing")
	}
	if !fired {
		t.Errorf("%s does not fire in the Ruler: %s", mixin.FleetBurnAlert, data)
	}
}

func queryAt(p promAPI, q string, at time.Time) ([]series, error) {
	data, err := p.get("/api/v1/query", map[string][]string{"query": {q}, "time": {fmt.Sprintf("%.3f", float64(at.UnixMilli())/1000)}})
	if err != nil {
		return nil, err
	}
	return decode(data)
}

// sameVectors compares two instant vectors by labels (ignoring those
// named) and value, to 1e-9 relative.
func sameVectors(a, b []series, ignore []string) string {
	key := func(s series) string {
		m := map[string]string{}
		for k, v := range s.Metric {
			if k != "__name__" && k != "rule_replica" && !contains(ignore, k) {
				m[k] = v
			}
		}
		return labelKey(m)
	}
	av := map[string]float64{}
	for _, s := range a {
		av[key(s)] = s.Values[0]
	}
	if len(a) != len(b) || len(a) == 0 {
		return fmt.Sprintf("%d series against %d: %v / %v", len(a), len(b), a, b)
	}
	for _, s := range b {
		v, ok := av[key(s)]
		if !ok {
			return fmt.Sprintf("%s only on one side (%v / %v)", key(s), a, b)
		}
		if d := math.Abs(v - s.Values[0]); d > 1e-9*math.Max(math.Abs(v), 1) {
			return fmt.Sprintf("%s: %g against %g", key(s), v, s.Values[0])
		}
	}
	return ""
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// Every dashboard query returns data through Query for each cluster
// where it returns data on that cluster's own Prometheus, and under All
// every series it returns names one cluster: none mixes clusters.
func (w *fleetWorld) checkFleetDashboards(t *testing.T) {
	type pq struct{ where, expr string }
	var qs []pq
	for _, d := range w.c.Dashboards() {
		for _, r := range d.Rows {
			for _, p := range r.Panels {
				for _, x := range p.Exprs {
					e := x.Expr
					if fleetMutant == "cluster" && p.Title == "Attainment per cluster (5m)" {
						e = strings.ReplaceAll(e, "sum by (cluster, ", "sum by (")
					}
					qs = append(qs, pq{d.UID + "/" + p.Title, e})
				}
			}
		}
	}
	end := time.Now()
	begin := end.Add(-30 * time.Second)
	n, withData := 0, 0
	for _, q := range qs {
		all, err := w.query.queryRange(substitute(q.expr), begin, end, 2*time.Second)
		if err != nil {
			t.Errorf("%s: %v", q.where, err)
			continue
		}
		for _, s := range all {
			if c := s.Metric["cluster"]; c != "east" && c != "west" && !isZeroFallback(s) {
				t.Errorf("%s: a series of no one cluster (%v) through Query:\n  %s", q.where, s.Metric, q.expr)
				break
			}
		}
		for _, cl := range []struct{ name, prom string }{{"east", "east-0"}, {"west", "west-0"}} {
			local, err := w.proms[cl.prom].queryRange(substitute(q.expr), begin, end, 2*time.Second)
			if err != nil {
				t.Errorf("%s on %s: %v", q.where, cl.prom, err)
				continue
			}
			if !hasData(local) {
				continue
			}
			n++
			via, err := w.query.queryRange(substitute(strings.ReplaceAll(q.expr, "$cluster", cl.name)), begin, end, 2*time.Second)
			if err != nil || !hasData(via) {
				t.Errorf("%s: data on %s's Prometheus, none through Query with cluster %s (%v)\n  %s", q.where, cl.prom, cl.name, err, q.expr)
				continue
			}
			withData++
			for _, s := range via {
				if s.Metric["cluster"] != cl.name && !isZeroFallback(s) {
					t.Errorf("%s with cluster %s: series %v", q.where, cl.name, s.Metric)
					break
				}
			}
		}
	}
	if withData < 40 {
		t.Errorf("only %d panel queries had data for a cluster", withData)
	}
	t.Logf("%d dashboard queries; %d (query, cluster) pairs with data, all through Query", len(qs), withData)
}

func hasData(ss []series) bool {
	for _, s := range ss {
		if len(s.Values) > 0 && !isZeroFallback(s) {
			return true
		}
	}
	return false
}

// isZeroFallback is the "or on () vector(0)" of a stat panel: no labels,
// value 0.
func isZeroFallback(s series) bool {
	if len(s.Metric) != 0 {
		return false
	}
	for _, v := range s.Values {
		if v != 0 {
			return false
		}
	}
	return true
}
