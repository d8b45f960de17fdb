package diagnosis

import (
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// BenchmarkObserve is one target's classification per collection cycle
// with the default settings (1 m window, 30 m baseline, 5 s scrapes: 372
// samples held) on a vLLM-sized snapshot: its histograms with vLLM's
// bucket counts.
func BenchmarkObserve(b *testing.B) {
	e := newEngine()
	e.ttft = &snapshot.Histogram{Bounds: []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}}
	e.ttft.Cumulative = make([]float64, len(e.ttft.Bounds))
	e.itl = &snapshot.Histogram{Bounds: []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}}
	e.itl.Cumulative = make([]float64, len(e.itl.Bounds))
	d := New(DefaultSettings())
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 5 * time.Second) }
	for i := 0; i < 400; i++ {
		e.healthy()
		d.Observe(at(i), e.snap(at(i)), nil, false)
	}
	snaps := make([]*snapshot.Snapshot, 64)
	for i := range snaps {
		e.healthy()
		snaps[i] = e.snap(at(400 + i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := snaps[i%len(snaps)]
		s.Time = at(400 + i)
		d.Observe(s.Time, s, nil, false)
	}
}
