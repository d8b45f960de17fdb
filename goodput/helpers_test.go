package goodput

import (
	"math"
	"regexp"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// vLLM V1 bucket families (METRICS.md, buckets.py).
func ttftBounds() []float64 {
	return []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
}

func interTokenBounds() []float64 {
	return []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
}

func requestBounds() []float64 {
	return []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
}

// histOf builds a cumulative histogram of the observations.
func histOf(bounds []float64, obs ...float64) *snapshot.Histogram {
	return testbody.HistOf(bounds, obs...)
}

// hist builds a histogram from cumulative counts given by hand.
func hist(bounds, cum []float64, count float64) *snapshot.Histogram {
	return &snapshot.Histogram{Bounds: bounds, Cumulative: cum, Count: count}
}

// repeat returns n copies of v.
func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func mustModel(t testing.TB, expr string) *regexp.Regexp {
	t.Helper()
	re, err := CompileModel(expr)
	if err != nil {
		t.Fatal(err)
	}
	return re
}

func near(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}

func checkNear(t testing.TB, what string, got, want float64) {
	t.Helper()
	if !near(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}
