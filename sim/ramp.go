package sim

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Ramp is a slow diurnal load curve for the open-loop classes: their total
// rate follows a cosine from Low at time 0 up to High at Period/2 and back
// to Low at Period, held for Step at a time as a client fleet's rate is.
// A ramp that crosses the knee lets a live knee estimate be checked
// against a sweep of the same engine.
type Ramp struct {
	Low, High float64 // total open-loop requests per second
	Period    time.Duration
	// Step is how long each rate holds; 0 means one minute.
	Step time.Duration
}

// Validate reports a ramp that cannot run.
func (r Ramp) Validate() error {
	if !(r.Low > 0) || !(r.High >= r.Low) || math.IsInf(r.High, 0) {
		return fmt.Errorf("ramp: want 0 < low <= high, got %v..%v", r.Low, r.High)
	}
	if r.Period <= 0 || r.Step < 0 {
		return errors.New("ramp: the period must be positive and the step not negative")
	}
	return nil
}

// RateAt is the total rate at virtual time t.
func (r Ramp) RateAt(t time.Duration) float64 {
	step := r.Step
	if step <= 0 {
		step = time.Minute
	}
	held := t.Truncate(step)
	phase := 2 * math.Pi * float64(held%r.Period) / float64(r.Period)
	return r.Low + (r.High-r.Low)*(1-math.Cos(phase))/2
}

// SetRate sets the total rate of the baseline's open-loop classes to
// total requests per second, keeping their shares, and applies it now
// under the current lever (a lever that scales the load scales this).
func (e *Engine) SetRate(total float64) error {
	if !(total > 0) || math.IsInf(total, 0) {
		return fmt.Errorf("rate must be positive, got %v", total)
	}
	w := cloneWorkload(e.base.Workload)
	sum := 0.0
	for _, c := range w.Classes {
		if c.Sessions == 0 {
			sum += c.Rate
		}
	}
	if sum <= 0 {
		return errors.New("the workload has no open-loop class to set the rate of")
	}
	for i := range w.Classes {
		if w.Classes[i].Sessions == 0 {
			w.Classes[i].Rate *= total / sum
		}
	}
	e.base.Workload = w
	e.apply(e.lever)
	return nil
}
