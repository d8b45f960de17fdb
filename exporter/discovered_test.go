package exporter

import (
	"strings"
	"testing"
	"time"

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
