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
	// between consecutive collections) where there is no counter.
	SourceIntegrated EnergySource = "integrated"
)

// EnergyDelta is one GPU's energy over one collection interval.
type EnergyDelta struct {
	Joules float64
	Source EnergySource
	OK     bool // false on the first reading, or when neither source had two ends
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
	at      time.Time
	power   Value
	counter Value
	// totals per source; a source is listed once it has been used or, on
	// the first reading, is the one the GPU will use.
	totals []EnergyTotal
}

// NewEnergyMeter returns an empty meter.
func NewEnergyMeter() *EnergyMeter {
	return &EnergyMeter{gpus: map[string]*energyState{}}
}

// Observe feeds one reading taken at now and returns the energy since the
// previous one. The counter wins when both ends have it; a counter lower
// than before (driver reload, counter wrap) counts its new value, energy
// since the reset, as Prometheus' rate() does, never a negative step.
// Without a counter at both ends, power is integrated if both ends have it.
func (m *EnergyMeter) Observe(now time.Time, d *Device) EnergyDelta {
	power, counter := sane(d.PowerW), sane(d.EnergyJ)
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
		s.at, s.power, s.counter = now, power, counter
		return EnergyDelta{}
	}
	dt := now.Sub(s.at).Seconds()
	if dt <= 0 {
		return EnergyDelta{} // a stale or repeated reading
	}
	var delta EnergyDelta
	switch {
	case counter.OK && s.counter.OK:
		j := counter.V - s.counter.V
		if j < 0 {
			j = counter.V
		}
		delta = EnergyDelta{Joules: j, Source: SourceCounter, OK: true}
	case power.OK && s.power.OK:
		delta = EnergyDelta{Joules: (power.V + s.power.V) / 2 * dt, Source: SourceIntegrated, OK: true}
	}
	if delta.OK {
		s.add(delta.Source, delta.Joules)
	}
	s.at, s.power, s.counter = now, power, counter
	return delta
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

// ForgetExcept drops every GPU not in keep: those a backend stopped
// listing. Should one come back, its first reading is a new baseline.
func (m *EnergyMeter) ForgetExcept(keep map[string]bool) {
	for k := range m.gpus {
		if !keep[k] {
			delete(m.gpus, k)
		}
	}
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

// sane drops readings no meter should integrate: NaN, Inf, negative.
func sane(v Value) Value {
	if !v.OK || math.IsNaN(v.V) || math.IsInf(v.V, 0) || v.V < 0 {
		return Value{}
	}
	return v
}
