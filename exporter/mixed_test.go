package exporter

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/config"
)

// One daemon on a mixed node: vLLM, TGI, Triton with the TensorRT-LLM
// backend and trtllm-serve, each detected from its own body, beside a
// target that times out every scrape. The bad one is down with its
// reason; every other one is up as its engine, with the values its
// fixture holds and no scrape error, scrape after scrape; and each says
// which failure modes it supports as the README's table does.
func TestMixedNodeOneBadTarget(t *testing.T) {
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	t.Cleanup(bad.Close)
	engines := []struct {
		target, fixture, engine, model string
		series                         string
		want                           float64
		supported, unsupported         []string
	}{
		{"vllm", "vllm/v1-kops-conformance-2026-03-qwen2.5-0.5b.prom", "vllm", "Qwen/Qwen2.5-0.5B-Instruct", "llm_requests_running", 0,
			[]string{"kv_preemption", "decode_saturation"}, nil},
		{"tgi", "tgi/tgi-v3.3-from-source.prom", "tgi", "unknown", "llm_requests_running", 17,
			[]string{"queue_growth", "engine_stall"}, []string{"kv_preemption", "prefill_interference", "prefix_cache_collapse"}},
		{"triton", "triton/tensorrtllm_backend-readme-ifb-sample.prom", "triton", "tensorrt_llm", "llm_kv_cache_usage_ratio", 0.4875,
			[]string{"queue_growth", "engine_stall"}, []string{"prefill_interference", "prefix_cache_collapse"}},
		{"trtllm", "trtllm/trtllm-from-source.prom", "trtllm", "Qwen/Qwen3-8B", "llm_requests_waiting", 3,
			[]string{"prefill_interference", "prefix_cache_collapse", "engine_stall"}, []string{"kv_preemption", "decode_saturation"}},
	}
	targets := []config.Target{{Name: "bad", URL: bad.URL + "/metrics", MaxBodySize: 1 << 20}}
	for _, e := range engines {
		srv := serveBody(t, fixture(t, e.fixture))
		targets = append(targets, config.Target{Name: e.target, URL: srv.URL + "/metrics"})
	}
	// A 2 s timeout: the first parse of a body learns its series, which
	// under the race detector on a busy machine takes most of a second.
	hs := startExporter(t, time.Second, 2*time.Second, targets...)
	var mfs map[string]*dto.MetricFamily
	for round := range 3 {
		mfs = hs.waitFor("the bad target failing again", func(m map[string]*dto.MetricFamily) bool {
			return value(m, "goodput_exporter_target_scrape_errors_total", map[string]string{"target": "bad", "reason": "timeout"}) >= float64(round+1)
		})
		if v := value(mfs, "llm_up", map[string]string{"target": "bad"}); v != 0 {
			t.Errorf("round %d: llm_up bad = %v", round, v)
		}
		for _, e := range engines {
			if v := value(mfs, "llm_up", map[string]string{"target": e.target, "engine": e.engine}); v != 1 {
				t.Errorf("round %d: llm_up{target=%q,engine=%q} = %v", round, e.target, e.engine, v)
			}
			if v := value(mfs, e.series, map[string]string{"target": e.target, "engine": e.engine, "model": e.model}); v != e.want {
				t.Errorf("round %d: %s{target=%q} = %v, the fixture says %v", round, e.series, e.target, v, e.want)
			}
			for _, r := range []string{"timeout", "connect", "http_status", "parse", "body_too_large"} {
				if v := value(mfs, "goodput_exporter_target_scrape_errors_total", map[string]string{"target": e.target, "reason": r}); v > 0 {
					t.Errorf("round %d: %s has %v %s errors", round, e.target, v, r)
				}
			}
		}
	}
	for _, e := range engines {
		for want, modes := range map[float64][]string{1: e.supported, 0: e.unsupported} {
			for _, mode := range modes {
				if v := value(mfs, "llm_failure_mode_supported", map[string]string{"target": e.target, "mode": mode}); v != want {
					t.Errorf("llm_failure_mode_supported{target=%q,mode=%q} = %v, want %v", e.target, mode, v, want)
				}
			}
		}
	}
}
