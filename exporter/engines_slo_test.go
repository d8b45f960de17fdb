package exporter

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/goodput-exporter/goodput-exporter/config"
)

// llm_slo_supported per engine, on each engine's fixture, for an SLO with
// every kind of objective: what the README's "What each engine supports"
// says. 1 is measurable, 0 not; "fallback" is measurable on per-token
// data instead of per-request TPOT.
func TestSLOSupportPerEngine(t *testing.T) {
	cases := []struct {
		fixture string
		want    map[string]string // objective -> 1, 0 or fallback
	}{
		{"tgi/tgi-v3.3-from-source.prom", map[string]string{"ttft": "0", "tpot": "1", "itl": "0", "e2e": "1", "queue": "1", "error": "1"}},
		{"triton/tensorrtllm_backend-readme-ifb-sample.prom", map[string]string{"ttft": "0", "tpot": "0", "itl": "0", "e2e": "0", "queue": "0", "error": "1"}},
		{"trtllm/trtllm-from-source.prom", map[string]string{"ttft": "1", "tpot": "1", "itl": "0", "e2e": "1", "queue": "1", "error": "1"}},
		{"dynamo/dynamo-frontend-from-source.prom", map[string]string{"ttft": "1", "tpot": "fallback", "itl": "1", "e2e": "1", "queue": "0", "error": "1"}},
		{"llamacpp/llamacpp-b11669-0.7.0-debian-light-load.prom", map[string]string{"ttft": "0", "tpot": "0", "itl": "0", "e2e": "0", "queue": "0", "error": "0"}},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			body := fixture(t, c.fixture)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body) }))
			defer srv.Close()
			cfg, err := config.Parse([]byte(fmt.Sprintf(`targets:
  - name: t
    url: %s
slos:
  - name: all
    objectives:
      ttft: { threshold: 1s, target: 0.9 }
      tpot: { threshold: 100ms, target: 0.9 }
      itl: { threshold: 100ms, target: 0.9 }
      e2e: { threshold: 20s, target: 0.9 }
      queue: { threshold: 1s, target: 0.9 }
      error: { target: 0.99 }
`, srv.URL)))
			if err != nil {
				t.Fatal(err)
			}
			e := New(Options{Interval: time.Hour, Timeout: 5 * time.Second})
			e.cfg = cfg
			tg, err := newTarget(cfg.Targets[0], 5*time.Second, cfg.GoodputSLOs(), e)
			if err != nil {
				t.Fatal(err)
			}
			e.targets = map[string]*target{tg.cfg.Name: tg}
			tg.scrape(context.Background())
			tg.scrape(context.Background())
			parser := expfmt.NewTextParser(model.UTF8Validation)
			mfs, err := parser.TextToMetricFamilies(bytes.NewReader(renderNow(e)))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, m := range mfs["llm_slo_supported"].GetMetric() {
				var obj, fallback string
				for _, l := range m.GetLabel() {
					switch l.GetName() {
					case "objective":
						obj = l.GetValue()
					case "fallback":
						fallback = l.GetValue()
					}
				}
				v := fmt.Sprint(m.GetGauge().GetValue())
				if v == "1" && fallback == "true" {
					v = "fallback"
				}
				got[obj] = v
			}
			for obj, want := range c.want {
				if got[obj] != want {
					t.Errorf("%s: llm_slo_supported = %q, want %q (all: %v)", obj, got[obj], want, got)
				}
			}
		})
	}
}
