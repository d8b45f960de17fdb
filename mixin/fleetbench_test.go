package mixin

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
)

// The fleet benchmark: the generated rules and alerts in a real
// Prometheus over a synthetic fleet. It is a measurement, not a test, and
// runs only with GOODPUT_FLEET_BENCH=1 (docs/benchmarks.md has the
// command and its figures):
//
//   - history is backfilled with promtool tsdb create-blocks-from
//     openmetrics: the SLO counters of the last 65 minutes (the rules
//     read only their last 5, but Prometheus holds them) and the tiles the
//     long windows and the hourly tiles read, 5m tiles over
//     6 hours and 1h tiles over 3 days; Prometheus compacts the 2h blocks
//     into longer ones, as it keeps them in production, before anything
//     is loaded or measured;
//   - the present is scraped every 15s from a synthetic exposition of
//     every daemon (honor_labels, so each keeps its instance and node);
//   - every group runs at its own interval for GOODPUT_FLEET_WAIT (5m30s
//     by default, so that the 5m windows hold only scraped data), then
//     /api/v1/rules is read every 30s, GOODPUT_FLEET_POLLS times (4), and
//     each evaluation of a group seen there (evaluationTime, its own and
//     each rule's) is kept: the live figures;
//   - then the scrape stops, the rules are unloaded, and each group's
//     expressions are evaluated one at a time through the query API at the
//     instant before, three times: the samples each reads, the query
//     engine's evaluation time and the CPU time of the process. This
//     covers the tile groups too, whose 5m and 1h intervals the live phase
//     does not reliably reach.
//
// GOODPUT_FLEET_NODES sets the number of nodes (default 1000); each has
// 4 engines and one SLO of 4 objectives.

const benchEngines = 4

var benchObjectives = []struct {
	name  string
	share float64 // good share
}{{"ttft", 0.98}, {"tpot", 0.97}, {"e2e", 0.995}, {"error", 0.999}}

var benchModes = []string{"queue_growth", "kv_preemption", "prefill_interference", "kv_monopoly",
	"prefix_cache_collapse", "decode_saturation", "gpu_throttling", "engine_stall"}

var benchReasons = []string{"timeout", "connect", "http_status", "body_too_large", "redirect", "read", "parse", "unknown_engine", "multiple_engines"}

type benchFleet struct {
	nodes int
	base  float64 // counters are rate * (t - base)
}

func (f benchFleet) daemon(n int) string {
	return fmt.Sprintf(`job="goodput-exporter",instance="node-%04d:9835",node="node-%04d"`, n, n)
}

func (f benchFleet) engine(n, e int) string {
	engines := []string{"vllm", "vllm", "sglang", "vllm"}
	return fmt.Sprintf(`%s,target="engine-%d",engine="%s",model="%s"`, f.daemon(n), e, engines[e], benchModels[e])
}

// benchModels are the models of a node's engines, in engine order.
var benchModels = []string{"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-14B", "meta-llama/Llama-3.1-70B-Instruct"}

func benchRate(e int) float64 { return float64(5 + e) }

// sloCounters writes the SLO counters of every engine at t.
func (f benchFleet) sloCounters(w io.Writer, t float64, ts string) {
	for n := 0; n < f.nodes; n++ {
		for e := 0; e < benchEngines; e++ {
			l := f.engine(n, e)
			r := benchRate(e) * (t - f.base)
			for _, o := range benchObjectives {
				fmt.Fprintf(w, "llm_slo_requests_total{%s,slo=\"chat\",objective=\"%s\"} %.0f%s\n", l, o.name, r, ts)
				fmt.Fprintf(w, "llm_slo_good_requests_total{%s,slo=\"chat\",objective=\"%s\"} %.0f%s\n", l, o.name, r*o.share, ts)
			}
		}
	}
}

// tiles writes the recorded tiles the windows read.
func (f benchFleet) tiles(w io.Writer, tile string, ts string) {
	for n := 0; n < f.nodes; n++ {
		for e := 0; e < benchEngines; e++ {
			l := f.engine(n, e)
			for _, o := range benchObjectives {
				fmt.Fprintf(w, "%s{%s,slo=\"chat\",objective=\"%s\",outcome=\"judged\"} %g%s\n", tileOutcome(tile), l, o.name, benchRate(e), ts)
				fmt.Fprintf(w, "%s{%s,slo=\"chat\",objective=\"%s\",outcome=\"good\"} %g%s\n", tileOutcome(tile), l, o.name, benchRate(e)*o.share, ts)
			}
		}
	}
	if tile != "5m" {
		return
	}
	// The fleet's tiles per model: the sum over nodes of its engines'.
	perModel := map[string]float64{}
	var models []string
	for e := 0; e < benchEngines; e++ {
		m := benchModels[e]
		if _, ok := perModel[m]; !ok {
			models = append(models, m)
		}
		perModel[m] += float64(f.nodes) * benchRate(e)
	}
	for _, m := range models {
		for _, o := range benchObjectives {
			fmt.Fprintf(w, "%s{model=\"%s\",slo=\"chat\",objective=\"%s\",outcome=\"judged\"} %g%s\n", fleetTileOutcome, m, o.name, perModel[m], ts)
			fmt.Fprintf(w, "%s{model=\"%s\",slo=\"chat\",objective=\"%s\",outcome=\"good\"} %g%s\n", fleetTileOutcome, m, o.name, perModel[m]*o.share, ts)
		}
	}
}

// live writes the exposition of every daemon at t.
func (f benchFleet) live(w io.Writer, t float64) {
	f.sloCounters(w, t, "")
	for n := 0; n < f.nodes; n++ {
		d := f.daemon(n)
		fmt.Fprintf(w, "up{%s} 1\ngoodput_exporter_config_last_reload_successful{%s} 1\ngoodput_exporter_gpu_backend_up{%s,backend=\"nvml\"} 1\n", d, d, d)
		for i, o := range benchObjectives {
			target := []float64{0.99, 0.95, 0.9, 0.99}[i]
			if n%2 == 1 && o.name == "ttft" {
				target = 0.95 // nodes declare different targets for the same SLO
			}
			fmt.Fprintf(w, "llm_slo_target_ratio{%s,slo=\"chat\",objective=\"%s\"} %g\n", d, o.name, target)
		}
		for e := 0; e < benchEngines; e++ {
			l := f.engine(n, e)
			r := benchRate(e) * (t - f.base)
			dt := t - f.base
			fmt.Fprintf(w, "llm_up{%s} 1\n", l)
			for _, b := range []struct {
				name  string
				share float64
			}{{"lower", 0.95}, {"upper", 0.97}} {
				fmt.Fprintf(w, "llm_goodput_requests_total{%s,slo=\"chat\",bound=\"%s\"} %.0f\n", l, b.name, r*b.share)
				fmt.Fprintf(w, "llm_goodput_tokens_total{%s,slo=\"chat\",bound=\"%s\"} %.0f\n", l, b.name, 250*r*b.share)
			}
			fmt.Fprintf(w, "llm_generation_tokens_total{%s} %.0f\nllm_prompt_tokens_total{%s} %.0f\n", l, 250*r, l, 1000*r)
			fmt.Fprintf(w, "llm_requests_waiting{%s} %d\nllm_requests_running{%s} %d\n", l, n%3, l, 40+e)
			fmt.Fprintf(w, "llm_kv_cache_usage_ratio{%s} 0.%d\nllm_preemptions_total{%s} %.0f\n", l, 5+e, l, 0.01*dt)
			g := fmt.Sprintf(`job="goodput-exporter",instance="node-%04d:9835",node="node-%04d",target="engine-%d"`, n, n, e)
			fmt.Fprintf(w, "llm_engine_gpu_energy_joules_total{%s,namespace=\"llm\",pod=\"engine-%d\",method=\"pod-resources\",split=\"none\"} %.0f\n", g, e, 700*dt)
			fmt.Fprintf(w, "llm_engine_gpu_power_watts{%s,namespace=\"llm\",pod=\"engine-%d\",method=\"pod-resources\",split=\"none\"} 700\n", g, e)
			fmt.Fprintf(w, "llm_engine_hourly_cost{%s,currency=\"EUR\",basis=\"gpus\"} 2.2\n", g)
			for i, m := range benchModes {
				v := 0
				if (n+i)%97 == 0 {
					v = 1
				}
				fmt.Fprintf(w, "llm_failure_mode{%s,mode=\"%s\"} %d\n", l, m, v)
			}
			for _, o := range benchObjectives {
				fmt.Fprintf(w, "llm_slo_supported{%s,slo=\"chat\",objective=\"%s\",source=\"x\",fallback=\"false\"} 1\n", l, o.name)
			}
			for _, reason := range benchReasons {
				fmt.Fprintf(w, "goodput_exporter_target_scrape_errors_total{%s,reason=\"%s\"} 0\n", g, reason)
			}
		}
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestFleetBenchmark(t *testing.T) {
	if os.Getenv("GOODPUT_FLEET_BENCH") == "" {
		t.Skip("a benchmark: set GOODPUT_FLEET_BENCH=1 (docs/benchmarks.md)")
	}
	nodes := 1000
	if s := os.Getenv("GOODPUT_FLEET_NODES"); s != "" {
		nodes, _ = strconv.Atoi(s)
	}
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("needs Prometheus (apt-get install prometheus)")
	}
	promtoolBin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("needs promtool")
	}
	dir := t.TempDir()
	if d := os.Getenv("GOODPUT_FLEET_DIR"); d != "" {
		dir = d
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().Truncate(time.Second)
	t0 := float64(now.Unix())
	f := benchFleet{nodes: nodes, base: t0 - 4*86400}

	// History, backfilled, one file per 2h block (promtool's block size,
	// aligned on the epoch): promtool reads its input once per block
	// range it spans, so one file of 3 days would be read 36 times.
	start := time.Now()
	stamp := func(x float64) string { return " " + strconv.FormatFloat(x, 'f', 0, 64) }
	type at struct {
		t    float64
		what string
	}
	var times []at
	for x := t0 - 3*86400; x <= t0-120; x += 3600 {
		times = append(times, at{x, "1h"})
	}
	for x := t0 - 6*3600; x <= t0-120; x += 300 {
		times = append(times, at{x, "5m"})
	}
	for x := t0 - 65*60; x <= t0-120; x += 15 {
		times = append(times, at{x, "raw"})
	}
	// Time-major, so that every series' samples ascend.
	sort.SliceStable(times, func(i, j int) bool { return times[i].t < times[j].t })
	data := filepath.Join(dir, "data")
	var size int64
	for len(times) > 0 {
		block := int64(times[0].t) / 7200
		n := 0
		for n < len(times) && int64(times[n].t)/7200 == block {
			n++
		}
		om := filepath.Join(dir, fmt.Sprintf("history-%d.om", block))
		out, err := os.Create(om)
		if err != nil {
			t.Fatal(err)
		}
		bw := bufio.NewWriterSize(out, 1<<20)
		for _, a := range times[:n] {
			if a.what == "raw" {
				f.sloCounters(bw, a.t, stamp(a.t))
			} else {
				f.tiles(bw, a.what, stamp(a.t))
			}
		}
		bw.WriteString("# EOF\n")
		if err := bw.Flush(); err != nil {
			t.Fatal(err)
		}
		out.Close()
		st, _ := os.Stat(om)
		size += st.Size()
		cmd := exec.Command(promtoolBin, "tsdb", "create-blocks-from", "openmetrics", "--quiet", om, data)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("backfill: %v\n%s", err, b[max(0, len(b)-2000):])
		}
		os.Remove(om)
		times = times[n:]
	}
	t.Logf("history: %d nodes, %.0f MB of OpenMetrics backfilled in %s", nodes, float64(size)/1e6, time.Since(start).Round(time.Second))

	// The present, scraped.
	feedPort, promPort := freePort(t), freePort(t)
	srv := &http.Server{Addr: fmt.Sprintf("127.0.0.1:%d", feedPort), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		bw := bufio.NewWriterSize(w, 1<<20)
		f.live(bw, float64(time.Now().Unix()))
		bw.Flush()
	})}
	go srv.ListenAndServe()
	defer srv.Close()

	// Rules at their own intervals: the live phase only has to leave the
	// recorded series the later groups read.
	c := Default()
	groups := append(c.RecordingGroups(), c.AlertGroups()...)
	// The global groups too, as Thanos Ruler would run them over a
	// cluster of this size (here its one Prometheus is the global view);
	// Prometheus refuses Thanos' partial-response field.
	for _, g := range c.GlobalGroups() {
		g.PartialResponseStrategy = ""
		groups = append(groups, g)
	}
	y, err := marshal(ruleFile{groups})
	if err != nil {
		t.Fatal(err)
	}
	rulesPath := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(rulesPath, y, 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	// writeCfg writes Prometheus' configuration, with or without the
	// rules and the scrape.
	writeCfg := func(live bool) {
		cfg := "global: { scrape_interval: 15s, scrape_timeout: 14s, evaluation_interval: 30s }\n"
		if live {
			cfg += fmt.Sprintf(`rule_files: [%s]
scrape_configs:
  - job_name: goodput-exporter
    honor_labels: true
    static_configs: [{ targets: ["127.0.0.1:%d"] }]
`, strconv.Quote(rulesPath), feedPort)
		}
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reload := func() {
		resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/-/reload", promPort), "", nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("reload: %v", err)
		}
		resp.Body.Close()
	}
	writeCfg(false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := exec.CommandContext(ctx, prom, "--config.file="+cfgPath, "--storage.tsdb.path="+data,
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort), "--storage.tsdb.retention.time=30d", "--log.level=warn", "--web.enable-lifecycle")
	plog, _ := os.Create(filepath.Join(dir, "prometheus.log"))
	p.Stdout, p.Stderr = plog, plog
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); p.Wait() }()

	// Prometheus first compacts the backfilled 2h blocks into the longer
	// blocks it keeps in production (up to 3 days with 30 days of
	// retention); a window read over dozens of 2h blocks costs several
	// times what it costs over a few long ones. Nothing is measured until
	// the compactions stop (none for 150s, two turns of its loop).
	start = time.Now()
	var last [2]float64
	still := time.Duration(0)
	for time.Since(start) < 25*time.Minute && still < 150*time.Second {
		time.Sleep(15 * time.Second)
		now := [2]float64{promSelf(promPort, "prometheus_tsdb_compactions_total"), promSelf(promPort, "prometheus_tsdb_blocks_loaded")}
		if now == last && now[1] > 0 {
			still += 15 * time.Second
		} else {
			still, last = 0, now
		}
	}
	t.Logf("compaction: %.0f compactions, %.0f blocks loaded, settled after %s", last[0], last[1], time.Since(start).Round(time.Second))
	writeCfg(true)
	reload()

	type group struct {
		Name           string
		EvaluationTime float64
		LastEvaluation time.Time
		Rules          []struct {
			Name, Health, LastError string
			EvaluationTime          float64
		}
	}
	getGroups := func() ([]group, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/rules", promPort))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var r struct{ Data struct{ Groups []group } }
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return nil, err
		}
		return r.Data.Groups, nil
	}
	wait := 5*time.Minute + 30*time.Second
	if d, err := time.ParseDuration(os.Getenv("GOODPUT_FLEET_WAIT")); err == nil {
		wait = d // a shorter smoke run
	}
	time.Sleep(wait)
	polls := 4
	if n, err := strconv.Atoi(os.Getenv("GOODPUT_FLEET_POLLS")); err == nil && n > 0 {
		polls = n
	}
	// Every evaluation seen, per group and per rule (keyed by group/rule
	// and the time of the evaluation, so that one seen twice counts once).
	type seen struct {
		group time.Duration
		rules []float64
	}
	evals := map[string]map[time.Time]seen{}
	var live []group
	for i := 0; i < polls; i++ {
		if i > 0 {
			time.Sleep(30 * time.Second)
		}
		live, err = getGroups()
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range live {
			if g.LastEvaluation.Year() < 2000 {
				continue // not evaluated yet
			}
			if evals[g.Name] == nil {
				evals[g.Name] = map[time.Time]seen{}
			}
			var rs []float64
			for _, r := range g.Rules {
				rs = append(rs, r.EvaluationTime)
			}
			evals[g.Name][g.LastEvaluation] = seen{time.Duration(g.EvaluationTime * float64(time.Second)), rs}
		}
	}
	for _, g := range live {
		for _, r := range g.Rules {
			if r.Health == "err" {
				t.Errorf("%s/%s: %s", g.Name, r.Name, r.LastError)
			}
		}
	}
	liveLoad, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("live phase: load average at its end %s\n", strings.Join(strings.Fields(string(liveLoad))[:3], " "))
	// Phase 2: the scrape stopped and the rules unloaded, each group's
	// expressions are evaluated one at a time at the instant before, and
	// the CPU time Prometheus spends on them is read from /proc: on a
	// shared machine wall time measures the neighbours, CPU time does not.
	evalAt := time.Now().Add(-10 * time.Second)
	srv.Close()
	writeCfg(false)
	reload()
	time.Sleep(20 * time.Second)
	series := "unknown"
	if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/status/tsdb", promPort)); err == nil {
		var r struct {
			Data struct {
				HeadStats struct{ NumSeries int }
			}
		}
		if json.NewDecoder(resp.Body).Decode(&r) == nil {
			series = strconv.Itoa(r.Data.HeadStats.NumSeries)
		}
		resp.Body.Close()
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("fleet: %d nodes x %d engines, %s series in the head, load average %s\n", nodes, benchEngines, series, strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Printf("| group | interval | rules | results | samples read | floor: samples of the series it selects | read / floor | live evaluations | live evaluationTime s (median, max) | slowest rule, live s (median) | query engine s (median of 3) | CPU s (median of 3) |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	// Two floors, measured the same way: merely selecting the 16,000 SLO
	// request counters, and their 5m rate summed as the rules sum it.
	// What a group costs beyond a few floors is its own.
	floors := []Group{
		{Name: "floor: select the request counters", Rules: []Rule{{Record: "floor", Expr: c.sel("llm_slo_requests_total")}}},
		{Name: "floor: their 5m rate, summed", Rules: []Rule{{Record: "floor", Expr: fmt.Sprintf("sum by (%s) (rate(%s[5m]))",
			c.by("target", "engine", "model", "slo", "objective"), c.sel("llm_slo_requests_total"))}}},
	}
	for _, g := range append(floors, groups...) {
		var cpus, engines []float64
		samples, results := 0, 0
		// The group's floor: each selector of its expressions (with its
		// range and offset) read once, and nothing else.
		floor := 0
		for _, sel := range selectorsOf(t, g) {
			floor += promStats(t, promPort, sel, evalAt).samples
		}
		for rep := 0; rep < 3; rep++ {
			c0, e := procCPU(t, p.Process.Pid), 0.0
			for _, r := range g.Rules {
				st := promStats(t, promPort, r.Expr, evalAt)
				e += st.eval
				if rep == 0 {
					samples += st.samples
					results += st.results
				}
			}
			cpus = append(cpus, procCPU(t, p.Process.Pid)-c0)
			engines = append(engines, e)
		}
		sort.Float64s(cpus)
		sort.Float64s(engines)
		liveCol, slowCol := "not evaluated", "–"
		if ev := evals[g.Name]; len(ev) > 0 {
			var times []float64
			perRule := make([][]float64, len(g.Rules))
			for _, s := range ev {
				times = append(times, s.group.Seconds())
				for i, x := range s.rules {
					if i < len(perRule) {
						perRule[i] = append(perRule[i], x)
					}
				}
			}
			sort.Float64s(times)
			liveCol = fmt.Sprintf("%.2f, %.2f", median(times), times[len(times)-1])
			slow, at := -1.0, 0
			for i, xs := range perRule {
				sort.Float64s(xs)
				if m := median(xs); m > slow {
					slow, at = m, i
				}
			}
			name := g.Rules[at].Record + g.Rules[at].Alert
			slowCol = fmt.Sprintf("`%s` %.2f", name, slow)
		}
		ratio := "–"
		if floor > 0 {
			ratio = fmt.Sprintf("%.2f", float64(samples)/float64(floor))
		}
		fmt.Printf("| `%s` | %s | %d | %d | %d | %d | %s | %d | %s | %s | %.2f | %.2f |\n", g.Name, g.Interval, len(g.Rules), results, samples,
			floor, ratio, len(evals[g.Name]), liveCol, slowCol, engines[1], cpus[1])
	}
}

// selectorsOf is every distinct selector of g's expressions as a query
// that reads exactly its samples: an instant selector as itself, a range
// selector under count_over_time.
func selectorsOf(t *testing.T, g Group) []string {
	seen := map[string]bool{}
	var out []string
	p := parser.NewParser(parser.Options{})
	for _, r := range g.Rules {
		e, err := p.ParseExpr(r.Expr)
		if err != nil {
			t.Fatalf("%s: %v", g.Name, err)
		}
		inRange := map[*parser.VectorSelector]bool{}
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			q := ""
			switch n := n.(type) {
			case *parser.MatrixSelector:
				inRange[n.VectorSelector.(*parser.VectorSelector)] = true
				q = "count_over_time(" + n.String() + ")"
			case *parser.VectorSelector:
				if !inRange[n] {
					q = n.String()
				}
			}
			if q != "" && !seen[q] {
				seen[q] = true
				out = append(out, q)
			}
			return nil
		})
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[len(xs)/2]
}

// procCPU is the user and system CPU seconds of a process.
func procCPU(t *testing.T, pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseFloat(f[11], 64)
	k, _ := strconv.ParseFloat(f[12], 64)
	return (u + k) / 100 // USER_HZ
}

// stats is what Prometheus reports of one query.
type stats struct {
	samples, results int
	eval             float64 // the query engine's evaluation time, s
}

// promStats evaluates q at t and returns the samples it read, the series
// it returned and the engine's evaluation time. It asks for count(q), so
// that the time measured is the evaluation's, not the encoding of
// thousands of series in JSON.
func promStats(t *testing.T, port int, q string, at time.Time) stats {
	resp, err := http.PostForm(fmt.Sprintf("http://127.0.0.1:%d/api/v1/query", port), map[string][]string{
		"query": {"count(" + q + ")"}, "stats": {"all"}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}})
	if err != nil {
		t.Error(err)
		return stats{}
	}
	defer resp.Body.Close()
	var r struct {
		Status, Error string
		Data          struct {
			Result []struct{ Value []any }
			Stats  struct {
				Timings struct{ EvalTotalTime float64 }
				Samples struct{ TotalQueryableSamples int }
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" {
		t.Errorf("%q: %v %s", q, err, r.Error)
	}
	n := 0
	if len(r.Data.Result) == 1 && len(r.Data.Result[0].Value) == 2 {
		v, _ := strconv.ParseFloat(fmt.Sprint(r.Data.Result[0].Value[1]), 64)
		n = int(v)
	}
	return stats{r.Data.Stats.Samples.TotalQueryableSamples, n, r.Data.Stats.Timings.EvalTotalTime}
}

// promSelf reads one of Prometheus' own metrics from its /metrics (the
// sum over its series), -1 when it cannot.
func promSelf(port int, name string) float64 {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err == nil {
				sum, found = sum+v, true
			}
		}
	}
	if !found {
		return -1
	}
	return sum
}
