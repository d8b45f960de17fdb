package exporter

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/config"
)

// Discovered targets run beside the configured ones: a reload of the file
// neither drops nor restarts them, a name the file uses stays the file's,
// and a discovered target that goes takes its series with it.
func TestDiscoveredTargetsBesideConfigured(t *testing.T) {
	vllm := serveBody(t, fixture(t, "vllm/v1-latest-from-source.prom"))
	sglang := serveBody(t, fixture(t, "sglang/sglang-from-source.prom"))
	hs := startExporter(t, 50*time.Millisecond, 50*time.Millisecond, config.Target{Name: "a", URL: vllm.URL})
	pod := config.Target{Name: "llm/p", URL: sglang.URL, Namespace: "llm", Pod: "p",
		Labels: map[string]string{"namespace": "llm", "pod": "p", "container": "engine"}}
	clash := config.Target{Name: "a", URL: sglang.URL}
	if err := hs.ex.SetDiscovered([]config.Target{pod, clash}); err != nil {
		t.Fatal(err)
	}
	mfs := hs.waitFor("a and llm/p up", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "a", "engine": "vllm"}) == 1 &&
			value(m, "llm_up", map[string]string{"target": "llm/p", "engine": "sglang", "namespace": "llm", "pod": "p", "container": "engine"}) == 1
	})
	if value(mfs, "llm_up", map[string]string{"target": "a", "engine": "sglang"}) != -1 {
		t.Error("a discovered target replaced the configured one of the same name")
	}
	// Defaults of the file reach discovered targets too.
	tp := hs.ex.targets["llm/p"]
	if tp.cfg.ModelLimit != config.DefaultModelLimit || tp.cfg.MaxBodySize != config.DefaultMaxBodySize || tp.cfg.Engine != "auto" {
		t.Errorf("discovered target without the defaults: %+v", tp.cfg)
	}

	if err := hs.ex.Reload(func() (*config.Config, error) {
		cfg, _ := config.Parse(nil)
		return cfg, cfg.AddTargets([]config.Target{{Name: "a", URL: vllm.URL}})
	}); err != nil {
		t.Fatal(err)
	}
	if hs.ex.targets["llm/p"] != tp {
		t.Error("a reload of the file restarted or dropped a discovered target")
	}

	if err := hs.ex.SetDiscovered(nil); err != nil {
		t.Fatal(err)
	}
	mfs = hs.waitFor("llm/p gone", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "llm/p"}) == -1
	})
	for name, mf := range mfs {
		for _, m := range mf.Metric {
			for _, lp := range m.Label {
				if lp.GetName() == "target" && lp.GetValue() == "llm/p" {
					t.Errorf("%s still has a series of the removed target", name)
				}
			}
		}
	}
	if value(mfs, "llm_up", map[string]string{"target": "a"}) != 1 {
		t.Error("removing the discovered targets disturbed the configured one")
	}
}

// A configured target that names its pod (namespace: llm, pod: p) carries
// namespace="llm" and pod="p" on its series, as a discovered pod does, on
// the goodput and SLO series as well as the engine's (the daemon's own
// per-target series carry only target, discovered or not); one that does
// not carries neither.
func TestConfiguredPodLabelsItsSeries(t *testing.T) {
	vllm := serveBody(t, fixture(t, "vllm/v1-latest-from-source.prom"))
	hs := startExporter(t, 50*time.Millisecond, 50*time.Millisecond,
		config.Target{Name: "podded", URL: vllm.URL, Namespace: "llm", Pod: "p"},
		config.Target{Name: "bare", URL: vllm.URL})
	mfs := hs.waitFor("both up", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "podded", "namespace": "llm", "pod": "p"}) == 1 &&
			value(m, "llm_up", map[string]string{"target": "bare"}) == 1
	})
	n := 0
	for name, mf := range mfs {
		if strings.HasPrefix(name, "goodput_exporter_") {
			continue
		}
		for _, m := range mf.Metric {
			l := map[string]string{}
			for _, lp := range m.Label {
				l[lp.GetName()] = lp.GetValue()
			}
			switch l["target"] {
			case "podded":
				n++
				if l["namespace"] != "llm" || l["pod"] != "p" {
					t.Errorf("%s%v lacks namespace=llm, pod=p", name, l)
				}
			case "bare":
				if _, ok := l["namespace"]; ok {
					t.Errorf("%s%v has a namespace the target does not name", name, l)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d series of the podded target", n)
	}
}

// One daemon runs at most MaxTargets targets (--collect.max-targets): a
// file naming more is refused and the running set stays; discovered
// targets past the cap wait (the file's come first), counted in
// goodput_exporter_targets_left_out, and start when room is made.
func TestMaxTargets(t *testing.T) {
	engine := serveBody(t, []byte("vllm:num_requests_running{model_name=\"m\"} 1\n"))
	ex := New(Options{Interval: time.Hour, Timeout: time.Second, MaxTargets: 3, Logger: discardLogger()})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); ex.Wait() }()
	if err := ex.Start(ctx, manyTargets(2, engine.URL)); err != nil {
		t.Fatal(err)
	}
	running := func() []string {
		ex.mu.Lock()
		defer ex.mu.Unlock()
		var names []string
		for name := range ex.targets {
			names = append(names, name)
		}
		slices.Sort(names)
		return names
	}
	pods := []config.Target{{Name: "pod-a", URL: engine.URL}, {Name: "pod-b", URL: engine.URL}, {Name: "pod-c", URL: engine.URL}}
	if err := ex.SetDiscovered(pods); err != nil {
		t.Fatal(err)
	}
	if got, want := running(), []string{"pod-a", "t-00000", "t-00001"}; !slices.Equal(got, want) {
		t.Errorf("running %v, want %v (the file's two, then the first pod)", got, want)
	}
	if v := testutil.ToFloat64(ex.self.targetsLeftOut); v != 2 {
		t.Errorf("targets left out %v, want 2", v)
	}
	err := ex.Reload(manyTargets(4, engine.URL))
	if err == nil || !strings.Contains(err.Error(), "4 targets configured, more than the 3 of --collect.max-targets") {
		t.Errorf("reload of 4 targets: %v", err)
	}
	if got := running(); len(got) != 3 || got[0] != "pod-a" {
		t.Errorf("after the refused reload, running %v: want the set before it", got)
	}
	if v := testutil.ToFloat64(ex.self.reloadOK); v != 0 {
		t.Errorf("reload gauge %v after a refused reload", v)
	}
	if err := ex.SetDiscovered(pods[2:]); err != nil {
		t.Fatal(err)
	}
	if got, want := running(), []string{"pod-c", "t-00000", "t-00001"}; !slices.Equal(got, want) {
		t.Errorf("running %v, want %v", got, want)
	}
	if v := testutil.ToFloat64(ex.self.targetsLeftOut); v != 0 {
		t.Errorf("targets left out %v, want 0 once there is room", v)
	}
}
