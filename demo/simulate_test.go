package demo

import (
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/sim"
)

// --engine gives each engine its own format and lever script; a bad one
// is refused with the flag's value.
func TestSimulateEngineFlag(t *testing.T) {
	formats, scenarios, err := EngineSpecs([]string{"vllm=healthy:10s,queue_growth:5s,abort,healthy", "sglang", "llamacpp=gpu_throttling"})
	if err != nil {
		t.Fatal(err)
	}
	if len(formats) != 3 || formats[0] != sim.FormatVLLM || formats[1] != sim.FormatSGLang || formats[2] != sim.FormatLlamaCPP {
		t.Fatalf("formats %v", formats)
	}
	// Engine 0: healthy for 10s, queue_growth for the next 5s, healthy after.
	if l := scenarios[0].LeverAt(12 * time.Second); l != sim.QueueGrowth {
		t.Errorf("engine 0 at 12s: %s, want queue_growth", l)
	}
	if l := scenarios[0].LeverAt(16 * time.Second); l != sim.Healthy {
		t.Errorf("engine 0 at 16s: %s, want healthy", l)
	}
	if l := scenarios[1].LeverAt(time.Hour); l != sim.Healthy {
		t.Errorf("engine 1 without a script: %s, want healthy", l)
	}
	if l := scenarios[2].LeverAt(time.Hour); l != sim.GPUThrottling {
		t.Errorf("engine 2: %s, want gpu_throttling", l)
	}
	for _, bad := range []string{"foo", "vllm=bogus:3s", "=healthy", "vllm=abort"} {
		if _, _, err := EngineSpecs([]string{bad}); err == nil {
			t.Errorf("--engine %q accepted", bad)
		}
	}
}
