package exporter

import (
	"strings"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Every input a signal names is a contract series, and every signal
// gauge has its inputs stated (nil only for the GPU's and the engine
// timing estimates).
func TestSignalInputsAreContractSeries(t *testing.T) {
	contract := collector.Support(snapshot.VLLM)
	in := SignalInputs()
	if len(in) != len(diagSignals) {
		t.Fatalf("%d signals with inputs, %d signals", len(in), len(diagSignals))
	}
	for name, alts := range in {
		if alts == nil && !strings.Contains(name, "_gpu_") && !strings.Contains(name, "_time_per_") {
			t.Errorf("%s: no inputs stated", name)
		}
		for _, all := range alts {
			for _, s := range all {
				if _, ok := contract[s]; !ok {
					t.Errorf("%s: input %s is not a contract series", name, s)
				}
			}
		}
	}
}
