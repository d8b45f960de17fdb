package gpu

import (
	"math"
	"time"
)

// EnergySource says how a GPU's energy was measured.
type EnergySource string

// Energy sources, the values of the source label.
const (
	// SourceCounter is the GPU's own cumulative energy counter (Volta and
	// newer through NVML or DCGM).
	SourceCounter EnergySource = "counter"
	// SourceIntegrated is board power integrated over time (trapezoid
	// between consecutive collections) where there is no counter, or
	// where the counter's step for an interval was implausible.
	SourceIntegrated EnergySource = "integrated"
)

// Glitch reasons: why an interval's energy counter reading was not used,
// the values of the reason label of
// goodput_exporter_gpu_energy_glitches_total.
const (
	// GlitchDecrease: the counter went down, but not to a value a driver
	// reload could leave (see EnergyMeter.Observe). Nothing is counted
	// for the interval and the previous reading stays the baseline.
	GlitchDecrease = "counter_decrease"
	// GlitchImplausible: the counter rose by more than the GPU could
	// draw at its power limit over the interval; the interval's energy
	// is integrated from board power instead.
	GlitchImplausible = "implausible_increase"
	// GlitchInvalid: the counter or the board power read NaN, ±Inf or
	// a negative value; that reading is treated as absent.
	GlitchInvalid = "invalid_reading"
)

// GlitchReasons lists every glitch reason, for pre-creating the counters.
func GlitchReasons() []string { return []string{GlitchDecrease, GlitchImplausible, GlitchInvalid} }

// The plausibility bound of one step of the energy counter is
//
//	plausibleMargin × power limit × (window + plausibleSlack)
//
// The margin covers power excursions above the enforced limit that the
// driver corrects within a second or so, and the slack the time between
// stamping a collection and the GPU actually being read (an HTTP round trip
// to dcgm-exporter, a slow NVML call). Where the GPU reports no power
// limit, fallbackPowerLimitW stands in: above the board limit of any
// data-centre GPU sold today, so it only catches the absurd.
const (
	plausibleMargin     = 1.2
	plausibleSlack      = time.Second
	fallbackPowerLimitW = 1500
	// maxDecreases is how many readings in a row may sit below the
	// baseline before the counter's new level is accepted as it is (the
	// counter really moved back: nothing is counted for those intervals,
	// and counting resumes from the new level).
	maxDecreases = 3
)

// EnergyDelta is one GPU's energy over one collection interval.
type EnergyDelta struct {
	Joules float64
	Source EnergySource
	OK     bool // false on the first reading, on a counter glitch, or when neither source had two ends
	// Glitch is set (one of the Glitch* reasons) when a reading of this
	// interval was not used as it came.
	Glitch string
	// Reset is true when the counter went down to a value a driver
	// reload explains; Joules is then the new value, as rate() counts it.
	Reset bool
}

// EnergyTotal is the energy accumulated from one source since the meter
// first saw the GPU.
type EnergyTotal struct {
	Source EnergySource
	Joules float64
}

// EnergyMeter turns successive Device readings into energy per interval
// and running totals per GPU. It is not safe for concurrent use.
type EnergyMeter struct {
	gpus map[string]*energyState
}

type energyState struct {
	seen time.Time // the latest reading (or the first, when absent since)

	// Board power at the previous reading; absent after a reading without
	// it or a collection without the GPU, so that nothing is integrated
	// across a gap.
	power   Value
	powerAt time.Time
	limitW  Value // the power limit at the previous reading

	// counter is the baseline the next counter step is measured from;
	// counterRead is the latest reading that showed it; since is the
	// latest reading that showed the value before it (the baseline's own
	// first reading when there was none). A source that refreshes less
	// often than it is read (dcgm-exporter samples every 30 s by default)
	// holds the counter for several readings and then moves by all of
	// them at once: the energy of that step was drawn after `since`, so
	// the plausibility window runs from there, not from the last reading.
	counter     Value
	counterRead time.Time
	since       time.Time
	decreases   int // readings in a row below the baseline

	// totals per source; a source is listed once it has been used or, on
	// the first reading, is the one the GPU will use.
	totals []EnergyTotal
}

// NewEnergyMeter returns an empty meter.
func NewEnergyMeter() *EnergyMeter {
	return &EnergyMeter{gpus: map[string]*energyState{}}
}

// Observe feeds one reading taken at now and returns the energy since the
// previous one. The counter wins when both ends have it. Its steps are
// judged against what the GPU can draw, P = 1.2 × its power limit (1500 W
// when unknown), over the window W since the counter last showed an older
// value (plus a second of slack):
//
//   - a step down to a value at most P × W is a reset (a driver reload
//     restarts the counter at zero, and since then the GPU cannot have
//     drawn more): the new value is the increase, as in rate();
//   - any other step down is a glitch: nothing is added and the previous
//     reading stays the baseline, so a dip that recovers costs nothing (a
//     level that stays lower for three readings becomes the baseline);
//   - a step up of more than P × W is implausible: the interval's energy
//     is integrated from board power instead (trapezoid), when both ends
//     have it, and the counter's new level becomes the baseline.
//
// Without a counter at both ends, power is integrated if both ends have
// it. NaN, infinite and negative readings are absent (and reported as
// GlitchInvalid).
func (m *EnergyMeter) Observe(now time.Time, d *Device) EnergyDelta {
	power, powerBad := check(d.PowerW)
	counter, counterBad := check(d.EnergyJ)
	limit, _ := check(d.PowerLimitW)
	var delta EnergyDelta
	if powerBad || counterBad {
		delta.Glitch = GlitchInvalid
	}
	s, ok := m.gpus[d.Key()]
	if !ok {
		s = &energyState{}
		m.gpus[d.Key()] = s
		switch {
		case counter.OK:
			s.add(SourceCounter, 0)
		case power.OK:
			s.add(SourceIntegrated, 0)
		}
		s.seen = now
		s.setPower(now, power, limit)
		s.setCounter(now, counter, now)
		return delta
	}
	if !now.After(s.seen) {
		return EnergyDelta{} // a stale or repeated reading
	}
	s.seen = now
	integrated := func() EnergyDelta {
		if power.OK && s.power.OK {
			return EnergyDelta{Joules: (power.V + s.power.V) / 2 * now.Sub(s.powerAt).Seconds(), Source: SourceIntegrated, OK: true}
		}
		return EnergyDelta{}
	}
	switch {
	case counter.OK && s.counter.OK:
		j := counter.V - s.counter.V
		bound := s.bound(now, limit)
		switch {
		case j == 0:
			delta = EnergyDelta{Source: SourceCounter, OK: true, Glitch: delta.Glitch}
			s.counterRead, s.decreases = now, 0
		case j < 0 && counter.V <= bound:
			delta = EnergyDelta{Joules: counter.V, Source: SourceCounter, OK: true, Reset: true, Glitch: delta.Glitch}
			s.setCounter(now, counter, s.counterRead)
		case j < 0:
			delta = EnergyDelta{Glitch: GlitchDecrease}
			if s.decreases++; s.decreases >= maxDecreases {
				s.setCounter(now, counter, s.counterRead)
			}
		case j > bound:
			delta = integrated()
			delta.Glitch = GlitchImplausible
			s.setCounter(now, counter, s.counterRead)
		default:
			delta = EnergyDelta{Joules: j, Source: SourceCounter, OK: true, Glitch: delta.Glitch}
			s.setCounter(now, counter, s.counterRead)
		}
	default:
		// No counter at one end: this interval is integrated, and the
		// counter (if read now) is the baseline for the next.
		g := delta.Glitch
		delta = integrated()
		delta.Glitch = g
		s.setCounter(now, counter, now)
	}
	s.setPower(now, power, limit)
	if delta.OK {
		s.add(delta.Source, delta.Joules)
	}
	return delta
}

// bound is the most energy the GPU can plausibly have drawn between the
// counter's window start and now.
func (s *energyState) bound(now time.Time, limit Value) float64 {
	w := float64(fallbackPowerLimitW)
	switch {
	case limit.OK && s.limitW.OK:
		w = max(limit.V, s.limitW.V)
	case limit.OK:
		w = limit.V
	case s.limitW.OK:
		w = s.limitW.V
	}
	window := now.Sub(s.since) + plausibleSlack
	return plausibleMargin * w * window.Seconds()
}

func (s *energyState) setPower(now time.Time, power, limit Value) {
	s.power, s.powerAt, s.limitW = power, now, limit
}

// setCounter makes v, read at now, the baseline; since is the latest
// reading that showed an older value.
func (s *energyState) setCounter(now time.Time, v Value, since time.Time) {
	s.counter, s.counterRead, s.since, s.decreases = v, now, since, 0
}

// Totals returns the GPU's running totals per source, in first-use order.
func (m *EnergyMeter) Totals(key string) []EnergyTotal {
	if s, ok := m.gpus[key]; ok {
		return s.totals
	}
	return nil
}

// Forget drops a GPU that is gone.
func (m *EnergyMeter) Forget(key string) { delete(m.gpus, key) }

// Absent notes a collection at now that did not list the GPUs outside
// seen. Each keeps its totals and its counter baseline, so that when it
// comes back its counter continues (the energy drawn while it was not
// listed is counted then) and its totals never go down; its power
// baseline is dropped, so that nothing is integrated across the gap. A GPU
// not listed for longer than after is forgotten: should it come back, its
// first reading is a new baseline. Absent returns the keys it forgot.
func (m *EnergyMeter) Absent(seen map[string]bool, now time.Time, after time.Duration) []string {
	var gone []string
	for k, s := range m.gpus {
		if seen[k] {
			continue
		}
		s.power = Value{}
		if now.Sub(s.seen) > after {
			delete(m.gpus, k)
			gone = append(gone, k)
		}
	}
	return gone
}

// Keys returns the GPUs the meter keeps state for.
func (m *EnergyMeter) Keys() []string {
	keys := make([]string, 0, len(m.gpus))
	for k := range m.gpus {
		keys = append(keys, k)
	}
	return keys
}

func (s *energyState) add(src EnergySource, j float64) {
	for i := range s.totals {
		if s.totals[i].Source == src {
			s.totals[i].Joules += j
			return
		}
	}
	s.totals = append(s.totals, EnergyTotal{Source: src, Joules: j})
}

// check drops readings no meter should integrate (NaN, Inf, negative) and
// says whether it dropped one.
func check(v Value) (Value, bool) {
	if !v.OK {
		return Value{}, false
	}
	if math.IsNaN(v.V) || math.IsInf(v.V, 0) || v.V < 0 {
		return Value{}, true
	}
	return v, false
}
