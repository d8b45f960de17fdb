package capacity

import (
	"sort"

	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Key names one estimator: a model and an SLO of one target.
type Key struct{ Model, SLO string }

// Observer keeps one Live estimator per model and SLO of a target and
// feeds them from the goodput tracker after each snapshot. Its size
// follows the tracker's: a model or SLO the tracker no longer holds is
// dropped on the next Observe. Not safe for concurrent use.
type Observer struct {
	opts LiveOptions
	est  map[Key]*Live
	// win holds, per estimator, the joint's window totals after the
	// last interval and at the start of the window being added up.
	win map[Key]*windowEdges
}

type windowEdges struct {
	last, start goodput.WindowTotals
}

// NewObserver returns an observer whose estimators use opts.
func NewObserver(opts LiveOptions) *Observer {
	return &Observer{opts: opts, est: map[Key]*Live{}, win: map[Key]*windowEdges{}}
}

// Observe folds the interval between prev and cur, which tr has just been
// updated with, into every model's estimators. The load is arrivals per
// second where the engine publishes running and waiting requests
// (finished requests plus the change in flight, so that load past the
// knee is not hidden by a server that finishes no more), else finished
// requests per second.
func (o *Observer) Observe(tr *goodput.Tracker, prev, cur *snapshot.Snapshot) {
	seen := map[Key]bool{}
	for _, m := range tr.Models() {
		for _, s := range m.SLOs {
			k := Key{m.Model, s.SLO}
			seen[k] = true
			if !m.Present || prev == nil || cur == nil {
				continue
			}
			w := o.win[k]
			if w == nil {
				w = &windowEdges{}
				o.win[k] = w
			}
			last := w.last
			w.last = s.Joint.Window.Clone()
			iv := s.Joint.Interval
			secs := cur.Time.Sub(prev.Time).Seconds()
			if !iv.OK || !s.Joint.TokensSupported || secs <= 0 {
				continue
			}
			e := o.est[k]
			if e == nil {
				e = NewLive(o.opts)
				o.est[k] = e
			}
			if e.secs == 0 {
				// A new window starts with this interval.
				w.start = last
			}
			// Where the tokens are bounds, a window's goodput is the
			// lower token bound drawn from its totals
			// (goodput.WindowTokenBounds), as the recording rules take
			// it; the intervals' bounds added up need not hold over it.
			var windowGood func() (float64, bool)
			if s.Joint.TokensBounded && iv.TokensBounded {
				start, end := w.start, s.Joint.Window
				windowGood = func() (float64, bool) {
					b, ok := goodput.WindowTokenBounds(start, end, 0)
					return b.Lower, ok
				}
			}
			e.add(cur.Time, secs, arrivals(iv.Requests, prev.Model(m.Model), cur.Model(m.Model)), iv.Tokens, iv.Good.Tokens.Lower, windowGood)
		}
	}
	for k := range o.est {
		if !seen[k] {
			delete(o.est, k)
		}
	}
	for k := range o.win {
		if !seen[k] {
			delete(o.win, k)
		}
	}
}

func arrivals(finished float64, a, b *snapshot.Model) float64 {
	if a == nil || b == nil {
		return finished
	}
	ra, wa := a.Gauges[snapshot.Running], a.Gauges[snapshot.Waiting]
	rb, wb := b.Gauges[snapshot.Running], b.Gauges[snapshot.Waiting]
	if !ra.OK || !wa.OK || !rb.OK || !wb.OK {
		return finished
	}
	return max(0, finished+(rb.V+wb.V)-(ra.V+wa.V))
}

// Keyed is one estimator's estimate.
type Keyed struct {
	Key
	Estimate
}

// Estimates returns the estimate of every estimator that has one, sorted
// by model and SLO.
func (o *Observer) Estimates() []Keyed {
	var out []Keyed
	for k, e := range o.est {
		if est, ok := e.Estimate(); ok {
			out = append(out, Keyed{k, est})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Model != out[j].Model {
			return out[i].Model < out[j].Model
		}
		return out[i].SLO < out[j].SLO
	})
	return out
}

// Len is how many estimators the observer holds.
func (o *Observer) Len() int { return len(o.est) }
