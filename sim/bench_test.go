package sim

import (
	"testing"
	"time"
)

// BenchmarkSimulate runs a minute of healthy virtual traffic per
// iteration and reports how many simulated requests a CPU second buys.
func BenchmarkSimulate(b *testing.B) {
	var requests uint64
	for b.Loop() {
		e, err := New(DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		e.AdvanceTo(time.Minute)
		requests += e.State().Counters.FinishedTotal()
	}
	b.ReportMetric(float64(requests)/b.Elapsed().Seconds(), "requests/s")
	b.ReportMetric(float64(b.N)*60/b.Elapsed().Seconds(), "virtual-s/s")
}
