package exporter

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/diagnosis"
)

// manualTarget builds a target on a fixture without starting its loop.
func manualTarget(t *testing.T, rel, engine string) (*Exporter, *target) {
	t.Helper()
	srv := serveBody(t, fixture(t, rel))
	cfg, err := config.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.AddTargets([]config.Target{{Name: "e", URL: srv.URL, Engine: engine}}); err != nil {
		t.Fatal(err)
	}
	e := New(Options{Interval: time.Hour, Timeout: 5 * time.Second})
	e.cfg = cfg
	tg, err := newTarget(cfg.Targets[0], 5*time.Second, nil, e)
	if err != nil {
		t.Fatal(err)
	}
	tg.setDiagnosis(cfg.DiagnosisSettings(), nil)
	e.targets = map[string]*target{"e": tg}
	return e, tg
}

func gather(t *testing.T, e *Exporter) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := e.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// byMode returns each mode's value of a family.
func byMode(mf *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	if mf == nil {
		return out
	}
	for _, m := range mf.Metric {
		for _, l := range m.Label {
			if l.GetName() == "mode" {
				out[l.GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// Every mode has llm_failure_mode_supported; llm_failure_mode exists only
// for the supported ones. Without GPU series gpu_throttling is
// unsupported; llama.cpp lacks what five modes need.
func TestFailureModeSeries(t *testing.T) {
	for _, tc := range []struct {
		fixture, engine string
		unsupported     []string
	}{
		{"vllm/v1-latest-from-source.prom", "vllm", []string{"gpu_throttling"}},
		{"llamacpp/server-cuda-2026-lfm2.5-8b.prom", "llamacpp",
			[]string{"kv_preemption", "prefill_interference", "kv_monopoly", "prefix_cache_collapse", "decode_saturation", "gpu_throttling"}},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			e, tg := manualTarget(t, tc.fixture, tc.engine)
			tg.scrape(context.Background())
			tg.scrape(context.Background())
			mfs := gather(t, e)
			sup, raised := byMode(mfs["llm_failure_mode_supported"]), byMode(mfs["llm_failure_mode"])
			if len(sup) != 8 {
				t.Fatalf("llm_failure_mode_supported for %d modes, want all 8: %v", len(sup), sup)
			}
			for _, m := range diagnosis.Modes() {
				want := 1.0
				for _, u := range tc.unsupported {
					if u == m.String() {
						want = 0
					}
				}
				if sup[m.String()] != want {
					t.Errorf("%s supported %v, want %v", m, sup[m.String()], want)
				}
				if v, ok := raised[m.String()]; ok != (want == 1) || v != 0 {
					t.Errorf("%s: llm_failure_mode %v (present %v), want 0 only if supported", m, v, ok)
				}
			}
		})
	}
}

// A target down for the whole window is an engine stall: the series says
// 1, the landing page names it with its evidence.
func TestFailureModeRaisedAndShown(t *testing.T) {
	e, tg := manualTarget(t, "vllm/v1-latest-from-source.prom", "vllm")
	tg.scrape(context.Background())
	now := time.Now()
	tg.mu.Lock()
	for i := 1; i <= 30; i++ {
		tg.diagnose(now.Add(time.Duration(i)*5*time.Second), nil)
	}
	tg.mu.Unlock()
	mfs := gather(t, e)
	if got := byMode(mfs["llm_failure_mode"]); got["engine_stall"] != 1 || got["queue_growth"] != 0 {
		t.Fatalf("llm_failure_mode %v, want engine_stall alone", got)
	}
	if mfs["llm_signal_running_ceiling"] == nil {
		t.Error("no llm_signal_running_ceiling once the window is judged")
	}
	web := httptest.NewServer(e.Handler("/metrics", nil))
	defer web.Close()
	resp, err := web.Client().Get(web.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "<strong>engine_stall</strong>") || !strings.Contains(string(body), "up in 0% of scrapes") {
		t.Errorf("landing page lacks the verdict and its evidence:\n%s", body)
	}
}
