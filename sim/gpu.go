package sim

import (
	"math"
	"time"
)

// Throttle reasons, as NVML names the clock event reasons.
const (
	ReasonGPUIdle    = "gpu_idle"
	ReasonSWPowerCap = "sw_power_cap"
	ReasonHWSlowdown = "hw_slowdown"
	ReasonSWThermal  = "sw_thermal_slowdown"
	ReasonHWThermal  = "hw_thermal_slowdown"
)

// throttleReasons lists the reasons in bit order.
var throttleReasons = [...]string{ReasonGPUIdle, ReasonSWPowerCap, ReasonHWSlowdown, ReasonSWThermal, ReasonHWThermal}

type throttleSet uint8

const (
	bitIdle throttleSet = 1 << iota
	bitPowerCap
	bitHWSlowdown
	bitSWThermal
	bitHWThermal
)

// gpuEnv is what levers change about the GPU's surroundings.
type gpuEnv struct {
	inletC, thermalResistance, powerLimitW float64
}

// gpuSegment is a stretch of time with constant power and activity.
type gpuSegment struct {
	powerW       float64
	busy         bool
	tensor, dram float64 // fraction of the time the pipes are active
	clockMHz     float64
	reasons      throttleSet
}

type gpuIntegrals struct {
	energyJ, busyS, tensorS, dramS float64
}

type gpuSample struct {
	at time.Duration
	v  gpuIntegrals
}

// gpu integrates power, activity and temperature exactly over piecewise
// constant segments, and keeps the whole-second samples a 1 Hz sampler
// (DCGM, NVML) would see.
type gpu struct {
	spec    *GPUSpec
	env     gpuEnv
	t       time.Duration
	seg     gpuSegment
	acc     gpuIntegrals
	tempC   float64
	samples [2]gpuSample // the last two whole seconds <= t
	ticks   [len(throttleReasons)]uint64
	// recent holds the reasons of the last clockEventsWindow whole
	// seconds, a ring indexed by second.
	recent [clockEventsWindow]throttleSet

	lastBusyEnd   time.Duration
	lastBusyClock float64
}

func newGPU(spec *GPUSpec) *gpu {
	g := &gpu{spec: spec, env: gpuEnv{spec.InletC, spec.ThermalResistance, spec.PowerLimitW}}
	g.seg = g.idleSegment()
	g.tempC = g.env.inletC + g.env.thermalResistance*spec.IdlePowerW
	g.lastBusyEnd = -time.Hour
	return g
}

func (g *gpu) idleSegment() gpuSegment {
	return gpuSegment{powerW: g.spec.IdlePowerW, clockMHz: g.spec.IdleSMClockMHz, reasons: bitIdle}
}

// advance integrates the current segment up to to.
func (g *gpu) advance(to time.Duration) {
	for s := (g.t/time.Second + 1) * time.Second; s <= to; s += time.Second {
		g.integrate(s - g.t)
		g.samples[0], g.samples[1] = g.samples[1], gpuSample{s, g.acc}
		for i := range throttleReasons {
			if g.seg.reasons&(1<<i) != 0 {
				g.ticks[i]++
			}
		}
		g.recent[int(s/time.Second)%clockEventsWindow] = g.seg.reasons
	}
	g.integrate(to - g.t)
}

func (g *gpu) integrate(d time.Duration) {
	if d <= 0 {
		return
	}
	g.acc = g.acc.plus(g.seg, d.Seconds())
	g.tempC = g.tempAfter(g.tempC, d)
	g.t += d
}

func (a gpuIntegrals) plus(s gpuSegment, dt float64) gpuIntegrals {
	a.energyJ += s.powerW * dt
	if s.busy {
		a.busyS += dt
	}
	a.tensorS += s.tensor * dt
	a.dramS += s.dram * dt
	return a
}

func (g *gpu) tempAfter(t0 float64, d time.Duration) float64 {
	steady := g.env.inletC + g.env.thermalResistance*g.seg.powerW
	return steady + (t0-steady)*math.Exp(-d.Seconds()/g.spec.ThermalTau.Seconds())
}

// set starts a new segment at the current time.
func (g *gpu) set(s gpuSegment) {
	if g.seg.busy && !s.busy {
		g.lastBusyEnd, g.lastBusyClock = g.t, g.seg.clockMHz
	}
	g.seg = s
}

// clocks decides the SM clock fraction and power for a step of the given
// activity (0..1): the power cap and the thermal controller each lower the
// clock until their limit holds; power falls with the square of the clock.
func (g *gpu) clocks(activity float64) (f, powerW float64, reasons throttleSet) {
	s := g.spec
	dyn := (s.MaxPowerW - s.IdlePowerW) * max(activity, 1e-6)
	full := s.IdlePowerW + dyn
	f = 1
	limitTo := func(p float64, bit throttleSet) {
		if full <= p {
			return
		}
		reasons |= bit
		f = min(f, math.Sqrt(max(p-s.IdlePowerW, 0)/dyn))
	}
	limitTo(g.env.powerLimitW, bitPowerCap)
	if g.tempC >= s.SlowdownC {
		// The steady-state power that holds the die at the slowdown point.
		limitTo((s.SlowdownC-g.env.inletC)/g.env.thermalResistance, bitSWThermal)
	}
	if g.tempC >= s.HWSlowdownC {
		reasons |= bitHWThermal | bitHWSlowdown
		f = min(f, 0.5)
	}
	f = max(f, s.MinClockFactor)
	return f, s.IdlePowerW + dyn*f*f, reasons
}

// GPUState is the simulated GPU as a 1 Hz sampler sees it.
type GPUState struct {
	// PowerW is the average over the last completed second.
	PowerW      float64
	PowerLimitW float64
	// EnergyMJ is the cumulative energy since start, in millijoules.
	EnergyMJ      float64
	SMClockMHz    float64
	MaxSMClockMHz float64
	MemClockMHz   float64
	TempC         float64
	// Util, TensorActive and DRAMActive are fractions of the last second.
	Util, TensorActive, DRAMActive float64
	// Throttle lists the reasons active now.
	Throttle []string
	// ThrottleTicks counts, per reason, the whole seconds it was active.
	ThrottleTicks map[string]uint64
	// ThrottleRecent counts, per reason, the whole seconds it was active
	// among the last clockEventsWindow: dcgm-exporter's
	// DCGM_EXP_CLOCK_EVENTS_COUNT, a windowed count despite its type.
	ThrottleRecent map[string]uint64
	MemoryUsedMiB  float64
	MemoryTotalMiB float64
}

// state reads the GPU at now (>= g.t) without changing it.
func (g *gpu) state(now time.Duration, memUtil float64) GPUState {
	s := g.spec
	at := func(x time.Duration) gpuIntegrals {
		if x >= g.t {
			return g.acc.plus(g.seg, (x - g.t).Seconds())
		}
		for _, smp := range g.samples {
			if smp.at == x {
				return smp.v
			}
		}
		return g.acc
	}
	st := GPUState{
		PowerLimitW:    g.env.powerLimitW,
		EnergyMJ:       at(now).energyJ * 1000,
		MaxSMClockMHz:  s.MaxSMClockMHz,
		MemClockMHz:    s.MemClockMHz,
		TempC:          g.tempAfter(g.tempC, now-g.t),
		ThrottleTicks:  map[string]uint64{},
		ThrottleRecent: map[string]uint64{},
		MemoryTotalMiB: s.MemoryMiB,
		MemoryUsedMiB:  math.Round(s.MemoryMiB * memUtil),
		PowerW:         g.seg.powerW,
	}
	if k := now / time.Second * time.Second; k >= time.Second {
		a, b := at(k-time.Second), at(k)
		st.PowerW = b.energyJ - a.energyJ
		st.Util, st.TensorActive, st.DRAMActive = b.busyS-a.busyS, b.tensorS-a.tensorS, b.dramS-a.dramS
	}
	switch {
	case g.seg.busy:
		st.SMClockMHz = g.seg.clockMHz
	case now-g.lastBusyEnd < time.Second:
		st.SMClockMHz = g.lastBusyClock
	default:
		st.SMClockMHz = s.IdleSMClockMHz
	}
	pending := uint64(now/time.Second - g.t/time.Second)
	for i, name := range throttleReasons {
		on := g.seg.reasons&(1<<i) != 0
		if on {
			st.Throttle = append(st.Throttle, name)
		}
		st.ThrottleTicks[name] = g.ticks[i]
		if on {
			st.ThrottleTicks[name] += pending
		}
		// The window ends at the last whole second (advance has filled
		// every second up to g.t; later ones are the current segment's).
		last := now / time.Second
		for k := last - clockEventsWindow + 1; k <= last; k++ {
			if k < 1 {
				continue
			}
			set := g.recent[int(k)%clockEventsWindow]
			if k*time.Second > g.t {
				set = g.seg.reasons
			}
			if set&(1<<i) != 0 {
				st.ThrottleRecent[name]++
			}
		}
	}
	return st
}

// clockEventsWindow is the window, in seconds, of the simulated
// dcgm-exporter's clock-event counts.
const clockEventsWindow = 5
