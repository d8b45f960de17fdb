package exporter

import (
	"os"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/collector/gpu"
	"github.com/goodput-exporter/goodput-exporter/config"
)

// A dcgm-exporter capture as the GPU backend and an engine configured to
// hold GPU 0: the GPU series appear, the engine gets the GPU's power, and
// its hourly cost is priced from the attributed GPU.
func TestGPUAttributionAndCost(t *testing.T) {
	dcgm, err := os.ReadFile("../collector/gpu/testdata/dcgm-exporter/kops-conformance-2026-03-L4-default-counters.prom")
	if err != nil {
		t.Fatal(err)
	}
	gpuSrv := serveBody(t, dcgm)
	engine := serveBody(t, fixture(t, "vllm/v1-kops-conformance-2026-03-qwen2.5-0.5b.prom"))
	backend, err := gpu.NewDCGMExporter(gpu.DCGMExporterOptions{URL: gpuSrv.URL})
	if err != nil {
		t.Fatal(err)
	}
	gm := gpu.NewManager(gpu.ManagerOptions{Backend: backend})
	t.Cleanup(func() { gm.Close() }) // after the exporter's Wait, as serve does
	hs := startExporterWith(t, Options{Interval: 50 * time.Millisecond, Timeout: 50 * time.Millisecond, GPU: gm},
		&config.Pricing{Currency: "USD", GPUHour: 0.8},
		config.Target{Name: "a", URL: engine.URL, GPUs: []string{"0"}},
		config.Target{Name: "b", URL: engine.URL})
	mfs := hs.waitFor("GPU attributed", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_engine_gpu_power_watts", map[string]string{"target": "a"}) > 0
	})
	if v := value(mfs, "llm_gpu_power_watts", map[string]string{"gpu": "0"}); v != 16.365 {
		t.Errorf("llm_gpu_power_watts = %v", v)
	}
	if v := value(mfs, "llm_engine_gpu_power_watts", map[string]string{"target": "a", "method": "config"}); v != 16.365 {
		t.Errorf("engine power = %v", v)
	}
	if v := value(mfs, "goodput_exporter_gpu_backend_up", map[string]string{"backend": "dcgm-exporter"}); v != 1 {
		t.Errorf("backend up = %v", v)
	}
	if v := value(mfs, "llm_engine_hourly_cost", map[string]string{"target": "a", "basis": "gpus", "currency": "USD"}); v != 0.8 {
		t.Errorf("cost of the target holding one GPU = %v", v)
	}
	if v := value(mfs, "llm_engine_hourly_cost", map[string]string{"target": "b"}); v != -1 {
		t.Errorf("a target with no known GPU and a per-GPU price must have no cost, got %v", v)
	}
}

func TestTokenDelta(t *testing.T) {
	cases := []struct {
		name      string
		prev, cur map[string]float64
		want      float64
	}{
		{"steady", map[string]float64{"a": 100, "b": 50}, map[string]float64{"a": 130, "b": 60}, 40},
		{"a model vanished: not a restart", map[string]float64{"a": 100, "b": 5000}, map[string]float64{"a": 130}, 30},
		{"a model restarted", map[string]float64{"a": 100, "b": 50}, map[string]float64{"a": 20, "b": 60}, 30},
		{"a new model sets its baseline", map[string]float64{"a": 100}, map[string]float64{"a": 110, "b": 9000}, 10},
		{"first cycle", nil, map[string]float64{"a": 100}, 0},
	}
	for _, c := range cases {
		if got := tokenDelta(c.prev, c.cur); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
