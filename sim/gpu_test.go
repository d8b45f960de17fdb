package sim

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestGPUEnergyIsExactOverSegments(t *testing.T) {
	spec := DefaultConfig().GPU
	g := newGPU(&spec)
	g.set(gpuSegment{powerW: 100, busy: true, clockMHz: 1980})
	g.advance(1500 * time.Millisecond)
	g.set(gpuSegment{powerW: 300, busy: true, clockMHz: 1980})
	g.advance(2200 * time.Millisecond)
	g.set(g.idleSegment())
	st := g.state(2200*time.Millisecond, 0.9)
	if want := (100*1.5 + 300*0.7) * 1000; math.Abs(st.EnergyMJ-want) > 1e-6 {
		t.Fatalf("energy %v mJ, want %v", st.EnergyMJ, want)
	}
	// The last completed second, [1s, 2s), was half at 100 W, half at 300 W.
	if math.Abs(st.PowerW-200) > 1e-9 || math.Abs(st.Util-1) > 1e-9 {
		t.Fatalf("last-second power %v W util %v, want 200 W and 1", st.PowerW, st.Util)
	}
	// Reading later extrapolates the idle segment without changing state.
	later := g.state(4*time.Second, 0.9)
	if want := (100*1.5 + 300*0.7 + spec.IdlePowerW*1.8) * 1000; math.Abs(later.EnergyMJ-want) > 1e-6 {
		t.Fatalf("energy at 4s %v, want %v", later.EnergyMJ, want)
	}
	if later.Util != 0 || !slices.Contains(later.Throttle, ReasonGPUIdle) || later.SMClockMHz != spec.IdleSMClockMHz {
		t.Fatalf("idle GPU reads util %v throttle %v clock %v", later.Util, later.Throttle, later.SMClockMHz)
	}
	if later.ThrottleTicks[ReasonGPUIdle] != 2 {
		t.Fatalf("gpu_idle ticks %d, want the 2 whole seconds 3s and 4s", later.ThrottleTicks[ReasonGPUIdle])
	}
}

func TestGPUThermalControllerHoldsSlowdownTemperature(t *testing.T) {
	spec := DefaultConfig().GPU
	g := newGPU(&spec)
	if f, _, r := g.clocks(1); f != 1 || r != 0 {
		t.Fatalf("cool GPU at full load: clock factor %v reasons %b", f, r)
	}
	g.env.inletC, g.env.thermalResistance = 50, spec.ThermalResistance*1.8
	var f float64
	var reasons throttleSet
	for now := time.Duration(0); now < 3*time.Minute; now += 50 * time.Millisecond {
		g.advance(now)
		var p float64
		f, p, reasons = g.clocks(0.7)
		g.set(gpuSegment{powerW: p, busy: true, clockMHz: spec.MaxSMClockMHz * f, reasons: reasons})
	}
	if reasons&bitSWThermal == 0 || f >= 1 {
		t.Fatalf("hot GPU: clock factor %v reasons %b, want a thermal slowdown", f, reasons)
	}
	if g.tempC > spec.SlowdownC+0.5 || g.tempC < spec.SlowdownC-0.5 {
		t.Fatalf("temperature %v, want held at %v", g.tempC, spec.SlowdownC)
	}
}

func TestGPUPowerCap(t *testing.T) {
	spec := DefaultConfig().GPU
	g := newGPU(&spec)
	g.env.powerLimitW = 300
	f, p, r := g.clocks(0.9)
	if r&bitPowerCap == 0 || math.Abs(p-300) > 1e-9 || f >= 1 {
		t.Fatalf("capped at 300 W: factor %v power %v reasons %b", f, p, r)
	}
}

// dcgm-exporter's clock-event count covers a recent window, not all time:
// once the cooling is back and the clocks recover, the thermal count
// returns to 0 while the cumulative ticks keep what happened.
func TestClockEventsCountIsWindowed(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Scenario, _ = ParseScenario("healthy:30s,gpu_throttling:150s,healthy:60s")
	e := mustNew(t, cfg)
	e.AdvanceTo(170 * time.Second)
	hot := e.GPU()
	if hot.ThrottleRecent[ReasonSWThermal] != clockEventsWindow {
		t.Fatalf("throttled GPU: %d of the last %d seconds with sw_thermal, want all", hot.ThrottleRecent[ReasonSWThermal], clockEventsWindow)
	}
	e.AdvanceTo(220 * time.Second)
	cool := e.GPU()
	if cool.ThrottleRecent[ReasonSWThermal] != 0 || cool.ThrottleTicks[ReasonSWThermal] < hot.ThrottleTicks[ReasonSWThermal] {
		t.Fatalf("40 s after the cooling returned: recent %d, cumulative %d (was %d)",
			cool.ThrottleRecent[ReasonSWThermal], cool.ThrottleTicks[ReasonSWThermal], hot.ThrottleTicks[ReasonSWThermal])
	}
}
