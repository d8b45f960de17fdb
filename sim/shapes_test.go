package sim

import (
	"math"
	"testing"
	"time"
)

// Bursty arrivals keep the mean rate and are bursty: counted per second,
// their variance over their mean (the index of dispersion) is about
// E[N²]/E[N] of the burst size, (2-p)/p = 15 for a mean of 8, where
// Poisson arrivals give 1. Over 3 seeds × 20 minutes at 10 req/s the
// count's standard deviation is about 1.2 % of its mean.
func TestBurstyArrivals(t *testing.T) {
	for _, tc := range []struct {
		shape          string
		dispLo, dispHi float64
	}{{"chat", 0.7, 1.4}, {"bursty", 8, 25}} {
		s, ok := ShapeByName(tc.shape)
		if !ok {
			t.Fatalf("no shape %q", tc.shape)
		}
		spec := s.Apply(DefaultConfig()).Workload.Classes[0]
		var arrived, sumSq, n float64
		const secs = 1200
		for seed := uint64(1); seed <= 3; seed++ {
			// The class's arrival process alone, as the engine drives it.
			cs := newClassState(seed, 0, spec)
			cs.reconfigure(&spec, 0)
			counts := make([]float64, secs)
			for cs.next < secs*time.Second {
				counts[cs.next/time.Second]++
				cs.scheduleNext(cs.next)
			}
			for _, c := range counts {
				arrived += c
				sumSq += c * c
				n++
			}
		}
		want := 3 * secs * spec.Rate
		if math.Abs(arrived-want) > 0.05*want {
			t.Errorf("%s: %.0f arrivals, want %.0f ± 5 %%", tc.shape, arrived, want)
		}
		mean := arrived / n
		disp := (sumSq/n - mean*mean) / mean
		if disp < tc.dispLo || disp > tc.dispHi {
			t.Errorf("%s: index of dispersion %.2f, want %.1f to %.1f", tc.shape, disp, tc.dispLo, tc.dispHi)
		}
		t.Logf("%s: %.0f arrivals (want %.0f), index of dispersion %.2f", tc.shape, arrived, want, disp)
	}
}

// Every shape is a valid configuration, and the levers still apply.
func TestShapesValidate(t *testing.T) {
	for _, s := range Shapes {
		for _, l := range Levers {
			cfg := s.Apply(DefaultConfig())
			cfg.Scenario = Scenario{Phases: []Phase{{Lever: l}}}
			if _, err := New(cfg); err != nil {
				t.Errorf("%s with %s: %v", s.Name, l, err)
			}
		}
	}
}
