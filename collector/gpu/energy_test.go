package gpu

import (
	"math"
	"testing"
	"time"
)

func ctr(j float64) EnergyDelta   { return EnergyDelta{Joules: j, Source: SourceCounter, OK: true} }
func integ(j float64) EnergyDelta { return EnergyDelta{Joules: j, Source: SourceIntegrated, OK: true} }
func glitch(d EnergyDelta, reason string) EnergyDelta {
	d.Glitch = reason
	return d
}

func TestEnergyMeter(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	type step struct {
		t             float64
		power, energy Value
		want          EnergyDelta
	}
	w700 := Some(700) // the power limit of the cases that set one
	for _, c := range []struct {
		name   string
		limit  Value
		steps  []step
		totals []EnergyTotal
	}{
		{"counter", Value{}, []step{
			{0, Some(300), Some(1000), EnergyDelta{}},
			{5, Some(310), Some(2500), ctr(1500)},
			{10, Some(320), Some(4000), ctr(1500)},
		}, []EnergyTotal{{SourceCounter, 3000}}},
		{"integrated trapezoid", Value{}, []step{
			{0, Some(100), Value{}, EnergyDelta{}},
			{5, Some(300), Value{}, integ(1000)}, // (100+300)/2*5
			{7, Some(300), Value{}, integ(600)},
		}, []EnergyTotal{{SourceIntegrated, 1600}}},
		// No power limit known: the bound is 1.2 * 1500 W * (5 s + 1 s)
		// = 10,800 J, and 700 J is below it.
		{"counter reset counts energy since the reset", Value{}, []step{
			{0, Some(300), Some(9_000_000), EnergyDelta{}},
			{5, Some(300), Some(700), EnergyDelta{Joules: 700, Source: SourceCounter, OK: true, Reset: true}},
			{10, Some(300), Some(2200), ctr(1500)},
		}, []EnergyTotal{{SourceCounter, 2200}}},
		// 700 W limit: a reload-sized value is at most 1.2*700*(5+1) =
		// 5,040 J. 2,000 J is: the new value is the increase.
		{"driver reload: the new value is the increase", w700, []step{
			{0, Some(600), Some(390_000_000), EnergyDelta{}},
			{5, Some(600), Some(2000), EnergyDelta{Joules: 2000, Source: SourceCounter, OK: true, Reset: true}},
			{10, Some(600), Some(4500), ctr(2500)},
		}, []EnergyTotal{{SourceCounter, 4500}}},
		// A 1 kJ dip of a 390 MJ counter is far above 5,040 J: a glitch,
		// nothing added, and the old reading stays the baseline, so the
		// next step (390,003,000 - 390,000,000 = 3,000 J over 10 s, under
		// 1.2*700*11 = 9,240 J) counts both intervals exactly once.
		{"a 1 kJ dip is a glitch, not a reset", w700, []step{
			{0, Some(600), Some(390_000_000), EnergyDelta{}},
			{5, Some(600), Some(389_999_000), EnergyDelta{Glitch: GlitchDecrease}},
			{10, Some(600), Some(390_003_000), ctr(3000)},
		}, []EnergyTotal{{SourceCounter, 3000}}},
		// A counter that stays below its baseline for three readings has
		// really moved back: its new level is the baseline, nothing of
		// those intervals counted; then 993,500 - 992,000 = 1,500 J.
		{"a lasting decrease becomes the baseline after three readings", w700, []step{
			{0, Some(600), Some(1_000_000), EnergyDelta{}},
			{5, Some(600), Some(990_000), EnergyDelta{Glitch: GlitchDecrease}},
			{10, Some(600), Some(991_000), EnergyDelta{Glitch: GlitchDecrease}},
			{15, Some(600), Some(992_000), EnergyDelta{Glitch: GlitchDecrease}},
			{20, Some(600), Some(993_500), ctr(1500)},
		}, []EnergyTotal{{SourceCounter, 1500}}},
		// +390 MJ in 5 s is above 1.2*700*(5+1) = 5,040 J: the interval
		// is integrated from power, (600+650)/2*5 = 3,125 J, and the
		// counter's new level is the baseline (+3,000 J next).
		{"a jump above the power limit falls back to power", w700, []step{
			{0, Some(600), Some(1_000_000), EnergyDelta{}},
			{5, Some(650), Some(391_000_000), glitch(integ(3125), GlitchImplausible)},
			{10, Some(650), Some(391_003_000), ctr(3000)},
		}, []EnergyTotal{{SourceCounter, 3000}, {SourceIntegrated, 3125}}},
		{"an implausible jump without power adds nothing", w700, []step{
			{0, Value{}, Some(1_000_000), EnergyDelta{}},
			{5, Value{}, Some(391_000_000), EnergyDelta{Glitch: GlitchImplausible}},
			{10, Value{}, Some(391_003_000), ctr(3000)},
		}, []EnergyTotal{{SourceCounter, 3000}}},
		// dcgm-exporter samples every 30 s by default: read every 5 s,
		// the counter holds for five readings and then moves by 30 s of
		// energy at once. 18,000 J (600 W for 30 s) is above 5,040 J but
		// within 1.2*700*(30+1) = 26,040 J: the window runs from the last
		// reading of an older value (t=0 here, the first reading; t=30
		// for the next step), not from the last reading.
		{"a counter refreshed less often than read is not implausible", w700, []step{
			{0, Some(600), Some(1_000_000), EnergyDelta{}},
			{5, Some(600), Some(1_000_000), ctr(0)},
			{10, Some(600), Some(1_000_000), ctr(0)},
			{15, Some(600), Some(1_000_000), ctr(0)},
			{20, Some(600), Some(1_000_000), ctr(0)},
			{25, Some(600), Some(1_000_000), ctr(0)},
			{30, Some(600), Some(1_018_000), ctr(18000)},
			{35, Some(600), Some(1_018_000), ctr(0)},
			{60, Some(600), Some(1_036_000), ctr(18000)},
		}, []EnergyTotal{{SourceCounter, 36000}}},
		{"counter goes missing and comes back", Value{}, []step{
			{0, Some(200), Some(1000), EnergyDelta{}},
			{5, Some(200), Value{}, integ(1000)},
			{10, Some(200), Some(99_999), integ(1000)}, // no counter at the start of this interval
			{15, Some(200), Some(100_999), ctr(1000)},
		}, []EnergyTotal{{SourceCounter, 1000}, {SourceIntegrated, 2000}}},
		{"lost GPU: nothing invented", Value{}, []step{
			{0, Some(200), Value{}, EnergyDelta{}},
			{5, Value{}, Value{}, EnergyDelta{}},
			{10, Some(200), Value{}, EnergyDelta{}},
			{15, Some(400), Value{}, integ(1500)},
		}, []EnergyTotal{{SourceIntegrated, 1500}}},
		{"NaN, infinite and negative readings are absent and reported", Value{}, []step{
			{0, Some(100), Some(500), EnergyDelta{}},
			{5, Some(math.NaN()), Some(-1), EnergyDelta{Glitch: GlitchInvalid}},
			{10, Some(100), Some(math.Inf(1)), EnergyDelta{Glitch: GlitchInvalid}},
			{15, Some(100), Value{}, integ(500)}, // (100+100)/2*5
		}, []EnergyTotal{{SourceCounter, 0}, {SourceIntegrated, 500}}},
		{"a negative power next to a good counter: the counter counts", Value{}, []step{
			{0, Some(100), Some(500), EnergyDelta{}},
			{5, Some(-3), Some(1500), glitch(ctr(1000), GlitchInvalid)},
			{10, Some(100), Some(2000), ctr(500)},
		}, []EnergyTotal{{SourceCounter, 1500}}},
		{"repeated timestamp ignored", Value{}, []step{
			{0, Some(100), Value{}, EnergyDelta{}},
			{0, Some(900), Value{}, EnergyDelta{}},
			{2, Some(100), Value{}, integ(200)},
		}, []EnergyTotal{{SourceIntegrated, 200}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := NewEnergyMeter()
			for i, s := range c.steps {
				d := Device{UUID: "GPU-x", PowerW: s.power, EnergyJ: s.energy, PowerLimitW: c.limit}
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

// A GPU missing from a collection keeps its baseline: when it comes back
// the counter step covers the gap. Power is not integrated across it.
func TestEnergyMeterAbsentGPU(t *testing.T) {
	m := NewEnergyMeter()
	t0 := time.Unix(0, 0)
	a := Device{UUID: "GPU-a", PowerW: Some(100), EnergyJ: Some(1000), PowerLimitW: Some(700)}
	b := Device{UUID: "GPU-b", PowerW: Some(100)}
	m.Observe(t0, &a)
	m.Observe(t0, &b)
	if gone := m.Absent(map[string]bool{}, t0.Add(5*time.Second), time.Minute); gone != nil {
		t.Fatalf("forgot %v after 5 s", gone)
	}
	// Back at 10 s: 1000 -> 4000 J, under 1.2*700*(10+1) = 9,240 J.
	a.EnergyJ = Some(4000)
	if d := m.Observe(t0.Add(10*time.Second), &a); d != ctr(3000) {
		t.Errorf("GPU a back: %+v, want +3000 J from the counter", d)
	}
	if d := m.Observe(t0.Add(10*time.Second), &b); d.OK {
		t.Errorf("GPU b back: %+v, want nothing integrated across the gap", d)
	}
	// Missing for more than the minute allowed: forgotten.
	gone := m.Absent(map[string]bool{"GPU-b": true}, t0.Add(71*time.Second), time.Minute)
	if len(gone) != 1 || gone[0] != "GPU-a" || m.Totals("GPU-a") != nil || m.Totals("GPU-b") == nil {
		t.Errorf("forgot %v; totals a %v b %v", gone, m.Totals("GPU-a"), m.Totals("GPU-b"))
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
