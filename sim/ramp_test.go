package sim

import (
	"math"
	"testing"
	"time"
)

// The cosine ramp from 4 to 24 req/s over 60 min: 4 at 0, 14 (the middle)
// at 15 min, 24 at 30 min, 4 again at 60 min; held a minute at a time, so
// 15m59s is still the 15 min value.
func TestRampRateAt(t *testing.T) {
	r := Ramp{Low: 4, High: 24, Period: time.Hour}
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{{0, 4}, {15 * time.Minute, 14}, {15*time.Minute + 59*time.Second, 14}, {30 * time.Minute, 24}, {time.Hour, 4}} {
		if got := r.RateAt(c.at); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("RateAt(%v) = %v, want %v", c.at, got, c.want)
		}
	}
	for _, bad := range []Ramp{{Low: 0, High: 1, Period: time.Hour}, {Low: 5, High: 4, Period: time.Hour}, {Low: 1, High: 2}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}

// SetRate scales the open-loop classes to the total and the load follows:
// in steady state 20 req/s finish about 1,600 requests between 20 s and
// 100 s (Poisson: sd 40; the default workload's 10 req/s would be 800).
func TestSetRate(t *testing.T) {
	e, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetRate(20); err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, c := range e.Config().Workload.Classes {
		if c.Sessions == 0 {
			sum += c.Rate
		}
	}
	if math.Abs(sum-20) > 1e-9 {
		t.Fatalf("open-loop rates add up to %v, want 20", sum)
	}
	e.Advance(100 * time.Second)
	n := len(e.Truth().Records(20*time.Second, 100*time.Second))
	if n < 1450 || n > 1750 {
		t.Fatalf("%d requests finished in 80 s at 20 req/s", n)
	}
	if e.SetRate(0) == nil || e.SetRate(math.NaN()) == nil {
		t.Fatal("a non-positive rate was accepted")
	}
}
