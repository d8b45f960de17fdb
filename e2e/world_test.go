package e2e

import (
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/diagnosis"
	"github.com/goodput-exporter/goodput-exporter/mixin"
)

// The clocks. The engines run speed simulated seconds per wall-clock
// second; the daemons judge a simulated minute (window) of wall time;
// the rules run ruleScale times faster than shipped (an hour of the
// shipped rules is a minute here), so that every window, for: and group
// interval fits the suite's few minutes.
const (
	speed     = 10
	ruleScale = 60
	collect   = time.Second
)

// window is the classifier's window in wall time: a simulated minute.
const window = time.Minute / speed

// engine is one simulated engine: its target name (simulate names them
// FORMAT-INDEX in port order), its lever, switched on at onset for dur
// (simulated time; dur 0: for ever), and the failure-mode alert it must
// raise ("" for none).
type engine struct {
	name, format string
	lever        string
	onset, dur   time.Duration
	alert        string
}

// script is the engine's lever script for simulate. A lever that leaves
// a backlog (a queue, long outputs, a stall's waiting clients) is ended
// with "abort", as the demo's tour does, so that what follows is healthy.
func (e engine) script() string {
	switch {
	case e.lever == "":
		return ""
	case e.dur == 0:
		return fmt.Sprintf("healthy:%s,%s", e.onset, e.lever)
	case e.lever == "prefix_cache_collapse" || e.lever == "gpu_throttling":
		return fmt.Sprintf("healthy:%s,%s:%s,healthy", e.onset, e.lever, e.dur)
	}
	return fmt.Sprintf("healthy:%s,%s:%s,abort,healthy", e.onset, e.lever, e.dur)
}

// wall is a simulated time as wall time from the start.
func wall(d time.Duration) time.Duration { return d / speed }

// at is when engine e's simulated clock reads d, in wall time: between
// the earliest and the latest moment its farm's clock can have started.
func (w *world) at(e engine, d time.Duration) (earliest, latest time.Time) {
	z := w.zero[e.name]
	return z[0].Add(wall(d)), z[1].Add(wall(d))
}

// Each lever starts after 3 simulated minutes of healthy traffic (18 s),
// longer than the classifier's baseline (below), and holds 5 simulated
// minutes (30 s): the classifier names a mode within 2 windows
// (docs/accuracy.md), the alert waits one more, and it must then stay
// firing to the lever's end and resolve within clearBy after it.
const (
	onset = 3 * time.Minute
	hold  = 5 * time.Minute
	// baseline is the classifier's, in simulated time: shorter than the
	// healthy history the daemons see before the levers (the daemons
	// start a second or two, 10 to 20 simulated seconds, after the
	// engines), as in production, where a daemon has run for longer
	// than its baseline when an incident starts. The shipped default is
	// 30 minutes, which the suite cannot wait for.
	baseline = 90 * time.Second
)

// The delays the lever check allows, in wall time: from the onset to the
// alert's notification, 2 windows for the classifier to raise the mode,
// the alert's for: (a window) and slack for the scrape, the rule
// evaluation and Alertmanager; from the lever's end to the resolution, 3
// windows for the classifier to clear the mode (docs/accuracy.md: 1m10s
// of simulated time at most) and the same slack.
const (
	slack   = 10 * time.Second
	firedBy = 3*window + slack
	clearBy = 3*window + slack
)

var (
	nodeA = []engine{
		{name: "vllm-0", format: "vllm"},
		{"vllm-1", "vllm", "kv_preemption", onset, hold, "LLMKVPreemption"},
		{"vllm-2", "vllm", "prefill_interference", onset, hold, "LLMPrefillInterference"},
		{"vllm-3", "vllm", "kv_monopoly", onset, hold, "LLMKVMonopoly"},
		{"vllm-4", "vllm", "decode_saturation", onset, hold, "LLMDecodeSaturation"},
		// The overload: four times the arrivals from 1 simulated minute on,
		// never ending.
		{name: "vllm-5", format: "vllm", lever: "queue_growth", onset: time.Minute},
	}
	nodeB = []engine{
		{name: "sglang-0", format: "sglang"},
		{"sglang-1", "sglang", "queue_growth", onset, hold, "LLMQueueGrowth"},
		{"sglang-2", "sglang", "prefix_cache_collapse", onset, hold, "LLMPrefixCacheCollapse"},
		{name: "llamacpp-3", format: "llamacpp"},
		{"llamacpp-4", "llamacpp", "gpu_throttling", onset, hold, "LLMGPUThrottling"},
		{"llamacpp-5", "llamacpp", "engine_stall", onset, hold, "LLMEngineStall"},
		// trtllm-serve: tokens counted when requests finish, vLLM's
		// histogram layouts under its own names.
		{name: "trtllm-6", format: "trtllm"},
		{"trtllm-7", "trtllm", "queue_growth", onset, hold, "LLMQueueGrowth"},
	}
	overloaded = "vllm-5"
	restarted  = "vllm-restart" // its own process on node A, killed and restarted
)

// failureModeAlerts are the eight failure-mode alerts' names, as the
// runbooks (docs/runbooks/) are named.
var failureModeAlerts = map[string]bool{"LLMQueueGrowth": true, "LLMKVPreemption": true, "LLMPrefillInterference": true,
	"LLMKVMonopoly": true, "LLMPrefixCacheCollapse": true, "LLMDecodeSaturation": true, "LLMGPUThrottling": true, "LLMEngineStall": true}

// world is everything the suite runs.
type world struct {
	start          time.Time
	prom           promAPI
	hook           *webhook
	daemonA        *proc
	daemonB        *proc
	instA, instB   string // host:port, Prometheus' instance label
	restart        *proc  // the engine killed and restarted
	restartPort    int
	restartArgs    []string
	farms, servers []*proc
	// zero is when each engine's simulated clock started, between the
	// start of its farm and the farm's ready line: [earliest, latest].
	zero map[string][2]time.Time
	// The restarted engine's own generation-token counter just before
	// the kill and just after the restart (-1: not read yet).
	beforeKill, afterRestart float64
}

// farm starts one node's engines and its dcgm-exporter endpoint and
// returns each engine's URL by name, and the GPU endpoint's.
func farm(t *testing.T, name string, engines []engine, flags ...string) (map[string]string, string, *proc) {
	args := append([]string{binary, "simulate", "--web.listen-address=127.0.0.1:0", fmt.Sprintf("--speed=%d", speed), "--seed=1"}, flags...)
	for _, e := range engines {
		spec := e.format
		if e.script() != "" {
			spec += "=" + e.script()
		}
		args = append(args, "--engine="+spec)
	}
	p := start(t, name, args...)
	out := p.waitLine(t, "scrape them with", 30*time.Second)
	p.ready = time.Now()
	urls := map[string]string{}
	gpus := ""
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 3 && f[0] == "engine":
			urls[f[1]] = f[2]
		case len(f) == 3 && f[0] == "gpus":
			gpus = f[2]
		}
	}
	for _, e := range engines {
		if urls[e.name] == "" {
			t.Fatalf("%s: no engine %s in:\n%s", name, e.name, out)
		}
	}
	return urls, gpus, p
}

// daemonConfig is one node's configuration file: a target per engine,
// holding the GPU of its index, the chat SLO with the node's thresholds,
// a GPU price, and the classifier scaled to the engines' clock as the
// demo does (window, baseline and queue_sustain shrink by speed, the
// rates per second among its thresholds grow by it).
func daemonConfig(t *testing.T, path string, engines []engine, urls map[string]string, extra map[string]string, slo string) {
	var b strings.Builder
	b.WriteString("targets:\n")
	var sloTargets []string
	for i, e := range engines {
		// The namespace and pod are the engine pod's: the daemon puts
		// them on the target's series, as Kubernetes discovery does.
		fmt.Fprintf(&b, "  - name: %s\n    url: %s\n    gpus: [\"%d\"]\n    namespace: inference\n    pod: %s\n", e.name, urls[e.name], i, e.name)
		if e.format != "llamacpp" { // llama.cpp can measure no objective
			sloTargets = append(sloTargets, e.name)
		}
	}
	var names []string
	for n := range extra {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  - name: %s\n    url: %s\n", n, extra[n])
		sloTargets = append(sloTargets, n)
	}
	th := diagnosis.DefaultThresholds()
	fmt.Fprintf(&b, `slos:
  - name: chat
    match:
      targets: [%s]
    objectives:
%s
pricing:
  currency: USD
  gpu_hour: 2.5
diagnosis:
  window: %s
  baseline: %s
  thresholds:
    queue_slope: %g
    preemption_rate: %g
    queue_sustain: %s
`, strings.Join(sloTargets, ", "), slo, window, baseline/speed, th.QueueSlope*speed, th.PreemptionRate*speed,
		th.Sustain()/speed)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	check := exec.Command(binary, "check-config", path)
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("check-config %s: %v\n%s\n%s", path, err, out, b.String())
	}
}

// The two nodes' SLO: the same name, different thresholds and targets.
// SGLang has no finish reasons, so node B has no error objective.
const (
	sloA = `      ttft: { threshold: 500ms, target: 0.99 }
      tpot: { threshold: 50ms, target: 0.95 }
      error: { target: 0.99, include_abort: true }`
	sloB = `      ttft: { threshold: 1s, target: 0.95 }
      tpot: { threshold: 100ms, target: 0.9 }`
)

// daemon starts the built binary on a free port with a configuration
// file, reading its node's GPUs from the farm's dcgm-exporter endpoint.
func daemon(t *testing.T, name, cfg, gpus string) (*proc, string) {
	port := freePort(t, 1)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p := start(t, name, binary, "--config.file="+cfg, "--web.listen-address="+addr,
		"--collect.interval="+collect.String(), "--gpu.backend=dcgm-exporter", "--gpu.dcgm-exporter.url="+gpus)
	waitHTTP(t, p, "http://"+addr+"/metrics", 30*time.Second)
	return p, addr
}

// mixinConfig is the shipped mixin with time compressed by ruleScale: the
// classifier's window, in the rules' time, is the daemons' window times
// ruleScale, so that the failure-mode alerts' for: is one daemon window.
func mixinConfig() mixin.Config {
	c := mixin.Default()
	c.TimeScale = ruleScale
	c.DiagnosisWindow = window * ruleScale
	return c
}

// renderRules writes every rule file of rules/ as the mixin renders it
// with c, checks that no shipped rule file is missing, and returns the
// paths.
func renderRules(t *testing.T, dir string, c mixin.Config) []string {
	files, err := c.Files()
	if err != nil {
		t.Fatal(err)
	}
	shipped, _ := filepath.Glob(filepath.Join("..", "rules", "*.yml"))
	var paths []string
	for _, s := range shipped {
		rel := "rules/" + filepath.Base(s)
		body, ok := files[rel]
		if !ok {
			t.Fatalf("%s is shipped but the mixin does not render it", rel)
		}
		p := filepath.Join(dir, filepath.Base(s))
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	if len(paths) < 2 {
		t.Fatalf("rule files %v: want the recording rules and the alerts", shipped)
	}
	return paths
}

// setup starts the world; t.Cleanup ends every process.
func setup(t *testing.T) *world {
	prometheus := need(t, "prometheus", "prometheus")
	promtool := need(t, "prometheus", "promtool")
	dir := t.TempDir()
	w := &world{start: time.Now(), hook: &webhook{}, beforeKill: -1, afterRestart: -1}

	// Node A's dcgm-exporter has DCGM_FI_DEV_MAX_SM_CLOCK added to its
	// counters file, node B's has the defaults: both ways of judging
	// gpu_throttling, and the clock-ratio panels, are exercised.
	urlsA, gpusA, fa := farm(t, "engines-a", nodeA, "--gpu.max-sm-clock")
	urlsB, gpusB, fb := farm(t, "engines-b", nodeB)
	w.farms = []*proc{fa, fb}
	w.zero = map[string][2]time.Time{}
	for _, f := range []struct {
		p  *proc
		es []engine
	}{{fa, nodeA}, {fb, nodeB}} {
		for _, e := range f.es {
			w.zero[e.name] = [2]time.Time{f.p.started, f.p.ready}
		}
	}
	// The engine to be killed: its own process, on a port it gets back
	// when restarted.
	w.restartPort = freePort(t, 2)
	w.restartArgs = []string{binary, "simulate", "--engines=1", "--format=vllm", fmt.Sprintf("--speed=%d", speed), "--seed=9",
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", w.restartPort)}
	w.restart = start(t, restarted, w.restartArgs...)
	w.restart.waitLine(t, "scrape them with", 30*time.Second)
	restartURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", w.restartPort)

	cfgA, cfgB := filepath.Join(dir, "node-a.yml"), filepath.Join(dir, "node-b.yml")
	daemonConfig(t, cfgA, nodeA, urlsA, map[string]string{restarted: restartURL}, sloA)
	daemonConfig(t, cfgB, nodeB, urlsB, nil, sloB)
	w.daemonA, w.instA = daemon(t, "daemon-a", cfgA, gpusA)
	w.daemonB, w.instB = daemon(t, "daemon-b", cfgB, gpusB)

	hook := httptest.NewServer(w.hook)
	t.Cleanup(hook.Close)
	files, err := mixinConfig().Files()
	if err != nil {
		t.Fatal(err)
	}
	am, amBase := startAlertmanager(t, dir, hook.URL, files[mixin.InhibitFile], "--log.level=info")

	rules := renderRules(t, filepath.Join(dir), mixinConfig())
	if out, err := exec.Command(promtool, append([]string{"check", "rules"}, rules...)...).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules on the rendered rules: %v\n%s", err, out)
	}
	promPort := freePort(t, 1)
	promCfg := filepath.Join(dir, "prometheus.yml")
	// The scrape attaches node as the mixin's DaemonLabels expect
	// (instance and job come with the scrape); the job is the mixin's
	// Selector.
	write(t, promCfg, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
alerting:
  alertmanagers:
    - static_configs:
        - targets: ['%s']
rule_files: ['%s']
scrape_configs:
  - job_name: goodput-exporter
    static_configs:
      - targets: ['%s']
        labels: { node: node-a }
      - targets: ['%s']
        labels: { node: node-b }
`, strings.TrimPrefix(amBase, "http://"), strings.Join(rules, "', '"), w.instA, w.instB))
	prom := start(t, "prometheus", prometheus, "--config.file="+promCfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort), "--rules.alert.resend-delay=1s")
	w.servers = []*proc{am, prom}
	w.prom = promAPI{base: fmt.Sprintf("http://127.0.0.1:%d", promPort)}
	waitHTTP(t, prom, w.prom.base+"/-/ready", 60*time.Second)
	return w
}

func write(t *testing.T, path, body string) {
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// logs is every process's log tail, for a failure that needs them.
func (w *world) logs() string {
	var b strings.Builder
	for _, p := range append(append([]*proc{w.daemonA, w.daemonB, w.restart}, w.farms...), w.servers...) {
		b.WriteString(p.tail() + "\n")
	}
	return b.String()
}

// since is the run so far as a PromQL range, e.g. "95s".
func (w *world) since() string { return fmt.Sprintf("%ds", int(time.Since(w.start).Seconds())+1) }

// startAlertmanager starts a real Alertmanager under dir that sends every
// alert as its own group ('...'), at once, each change within a second,
// resolutions too, to the webhook at hook, with the inhibit rules given
// (the mixin's, as shipped), and returns it and its base URL once it is
// ready.
func startAlertmanager(t *testing.T, dir, hook string, inhibit []byte, args ...string) (*proc, string) {
	t.Helper()
	alertmanager := need(t, "prometheus-alertmanager", "prometheus-alertmanager", "alertmanager")
	port := freePort(t, 1)
	cfg := filepath.Join(dir, "alertmanager.yml")
	write(t, cfg, fmt.Sprintf(`route:
  receiver: webhook
  group_by: ['...']
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: webhook
    webhook_configs:
      - url: %s/
        send_resolved: true
`, hook)+string(inhibit))
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	am := start(t, "alertmanager", append([]string{alertmanager, "--config.file=" + cfg, "--storage.path=" + filepath.Join(dir, "am"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--cluster.listen-address="}, args...)...)
	waitHTTP(t, am, base+"/-/ready", 30*time.Second)
	return am, base
}
