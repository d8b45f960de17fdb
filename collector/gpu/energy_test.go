package gpu

import (
	"math"
	"testing"
	"time"
)

func TestEnergyMeter(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	type step struct {
		t             float64
		power, energy Value
		want          EnergyDelta
	}
	for _, c := range []struct {
		name   string
		steps  []step
		totals []EnergyTotal
	}{
		{"counter", []step{
			{0, Some(300), Some(1000), EnergyDelta{}},
			{5, Some(310), Some(2500), EnergyDelta{1500, SourceCounter, true}},
			{10, Some(320), Some(4000), EnergyDelta{1500, SourceCounter, true}},
		}, []EnergyTotal{{SourceCounter, 3000}}},
		{"integrated trapezoid", []step{
			{0, Some(100), Value{}, EnergyDelta{}},
			{5, Some(300), Value{}, EnergyDelta{1000, SourceIntegrated, true}}, // (100+300)/2*5
			{7, Some(300), Value{}, EnergyDelta{600, SourceIntegrated, true}},
		}, []EnergyTotal{{SourceIntegrated, 1600}}},
		{"counter reset counts energy since the reset", []step{
			{0, Some(300), Some(9_000_000), EnergyDelta{}},
			{5, Some(300), Some(700), EnergyDelta{700, SourceCounter, true}},
			{10, Some(300), Some(2200), EnergyDelta{1500, SourceCounter, true}},
		}, []EnergyTotal{{SourceCounter, 2200}}},
		{"counter goes missing and comes back", []step{
			{0, Some(200), Some(1000), EnergyDelta{}},
			{5, Some(200), Value{}, EnergyDelta{1000, SourceIntegrated, true}},
			{10, Some(200), Some(99_999), EnergyDelta{1000, SourceIntegrated, true}}, // no counter at the start of this interval
			{15, Some(200), Some(100_999), EnergyDelta{1000, SourceCounter, true}},
		}, []EnergyTotal{{SourceCounter, 1000}, {SourceIntegrated, 2000}}},
		{"lost GPU: nothing invented", []step{
			{0, Some(200), Value{}, EnergyDelta{}},
			{5, Value{}, Value{}, EnergyDelta{}},
			{10, Some(200), Value{}, EnergyDelta{}},
			{15, Some(400), Value{}, EnergyDelta{1500, SourceIntegrated, true}},
		}, []EnergyTotal{{SourceIntegrated, 1500}}},
		{"insane readings are absent", []step{
			{0, Some(100), Some(500), EnergyDelta{}},
			{5, Some(math.NaN()), Some(-1), EnergyDelta{}},
			{10, Some(100), Some(math.Inf(1)), EnergyDelta{}},
			{15, Some(100), Value{}, EnergyDelta{500, SourceIntegrated, true}},
		}, []EnergyTotal{{SourceCounter, 0}, {SourceIntegrated, 500}}},
		{"repeated timestamp ignored", []step{
			{0, Some(100), Value{}, EnergyDelta{}},
			{0, Some(900), Value{}, EnergyDelta{}},
			{2, Some(100), Value{}, EnergyDelta{200, SourceIntegrated, true}},
		}, []EnergyTotal{{SourceIntegrated, 200}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := NewEnergyMeter()
			for i, s := range c.steps {
				d := Device{UUID: "GPU-x", PowerW: s.power, EnergyJ: s.energy}
				if got := m.Observe(at(s.t), &d); got != s.want {
					t.Errorf("step %d: %+v, want %+v", i, got, s.want)
				}
			}
			got := m.Totals("GPU-x")
			if len(got) != len(c.totals) {
				t.Fatalf("totals %+v, want %+v", got, c.totals)
			}
			for i := range got {
				if got[i] != c.totals[i] {
					t.Errorf("totals %+v, want %+v", got, c.totals)
				}
			}
		})
	}
}

func TestEnergyMeterKeepsGPUsApart(t *testing.T) {
	m := NewEnergyMeter()
	t0 := time.Unix(0, 0)
	a, b := Device{UUID: "GPU-a", EnergyJ: Some(10)}, Device{UUID: "GPU-b", EnergyJ: Some(1000)}
	m.Observe(t0, &a)
	m.Observe(t0, &b)
	a.EnergyJ, b.EnergyJ = Some(20), Some(1100)
	if d := m.Observe(t0.Add(time.Second), &a); d.Joules != 10 {
		t.Errorf("GPU a: %+v", d)
	}
	if d := m.Observe(t0.Add(time.Second), &b); d.Joules != 100 {
		t.Errorf("GPU b: %+v", d)
	}
	m.Forget("GPU-a")
	if m.Totals("GPU-a") != nil || m.Totals("GPU-b") == nil {
		t.Error("Forget dropped the wrong GPU")
	}
}
