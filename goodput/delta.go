package goodput

import (
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// The trackers below keep the previous cumulative value of one series and,
// after advance, the reset-aware increase since it. Their buffers are reused
// so that a steady target costs no allocations.
//
// Each series is judged on its own, as Prometheus' rate() does:
//   - it went up or stayed: the difference is the increase;
//   - it went down to at most half its previous value: it reset (a fresh
//     start of that series), so its new value is the increase; unless the
//     collector has a witness that the process did not start again
//     (Snapshot.NoReset: an unchanged process start time), which makes
//     any fall a glitch;
//   - it went down by less than half: no fresh start can explain it (an
//     engine that restarted would have lost more), so it is a glitch (two
//     replicas behind one address, a torn read). Nothing is added and the
//     higher baseline is kept, so that the series coming back adds nothing
//     either; a value that stays below for glitchRebase snapshots in a row
//     becomes the new baseline (still adding nothing).
//
// Every increase, whatever it comes from (a rise, a reset, a restart, a
// series seen for the first time), must be one the engine could have
// made: at most max(ceiling, peakHeadroom × the largest rate the series
// showed recently) per second since its baseline, the time never taken as
// less than the scrape interval (Limits). A larger one is implausible (a
// duplicate series whose copy is a thousand times the original, read
// first in one body and second in the next): nothing is added, and a
// rise keeps the old baseline, so that the value coming back adds nothing
// either; a value that stays up for glitchRebase snapshots in a row
// becomes the new baseline (still adding nothing).
//
// mode says what the snapshot as a whole is (see Tracker). A series seen
// for the first time outside a baseline snapshot counts from zero.

// mode is how one snapshot relates to the previous one of its target.
type mode struct {
	// restarted: a new process; every value is the increase.
	restarted bool
	// baseline: values of unknown age; every series only sets its baseline.
	baseline bool
	// noReset: no series can have started again; a fall is a glitch.
	noReset bool
	// now is the snapshot's time, since the previous snapshot's of the
	// target (zero when unknown).
	now, since time.Time
	lim        Limits
}

// Limits bound how much an engine counter may rise in one interval. An
// engine can count requests and tokens only so fast: an increase above
// max(ceiling, peakHeadroom × the series' recent peak rate) per second
// since the series' baseline is a glitch (DiscontinuityImplausible), added
// nowhere. The recent peak lets an engine that has shown rates above the
// ceiling go on (growing at most peakHeadroom times per interval).
type Limits struct {
	// RequestsPerSecond is the ceiling for request counts (histogram
	// counts, finished requests); TokensPerSecond for token counters.
	// 0 turns that bound off.
	RequestsPerSecond float64
	TokensPerSecond   float64
	// Interval is the scrape interval: an increase is never judged over
	// less time than this, so that snapshots read close together (a
	// scrape retried at once) are not held to a few milliseconds' worth.
	// 0: only the snapshots' own times count.
	Interval time.Duration
}

// DefaultLimits are ceilings no single engine process reaches: 10,000
// requests and 2,000,000 tokens per second per model and series, ten
// times and more what the largest single-node deployments serve. They
// catch a lifetime total or a ×1000 copy counted as one interval's
// increase, not a busy engine.
var DefaultLimits = Limits{RequestsPerSecond: 10_000, TokensPerSecond: 2_000_000}

// An engine that has shown rates above the ceiling may rise this many
// times its recent peak rate.
const peakHeadroom = 4

// The recent peak rate halves every peakHalfLife.
const peakHalfLife = time.Hour

// pace follows the time of one series' baseline and its recent peak rate.
type pace struct {
	at   time.Time // when the baseline was read (zero: unknown)
	peak float64   // per second
}

// seconds is the time the next increase spans: since the baseline (or
// the target's previous snapshot for a new series), at least the scrape
// interval; 0 when unknown.
func (p *pace) seconds(md mode) float64 {
	from := p.at
	if from.IsZero() {
		from = md.since
	}
	dt := 0.0
	if !from.IsZero() && !md.now.IsZero() {
		dt = md.now.Sub(from).Seconds()
	}
	return max(dt, md.lim.Interval.Seconds())
}

// implausible reports whether an increase d over dt seconds is more than
// the engine could have made.
func (p *pace) implausible(d, dt, ceiling float64) bool {
	if !(ceiling > 0) || !(dt > 0) {
		return false
	}
	return d > max(ceiling, peakHeadroom*p.peak)*dt
}

// note records an accepted increase d over dt seconds.
func (p *pace) note(d, dt float64) {
	if !(dt > 0) {
		return
	}
	p.peak *= math.Exp2(-dt / peakHalfLife.Seconds())
	if r := d / dt; r > p.peak {
		p.peak = r
	}
}

// event is what happened to one series in one advance, when it was not a
// plain continuation.
type event uint8

const (
	eventNone        event = iota
	eventReset             // went down to at most half: counted as a fresh start
	eventGlitch            // went down by less than half: nothing added
	eventLayout            // a histogram's bucket bounds changed
	eventImplausible       // rose by more than the engine could have: nothing added
)

// Kinds of Discontinuity.
const (
	DiscontinuityReset          = "reset"
	DiscontinuityGlitch         = "glitch"
	DiscontinuityLayoutChange   = "layout_change"
	DiscontinuityLayoutUnstable = "layout_unstable"
	// DiscontinuityImplausible: an increase above what the engine could
	// have made in the interval (Limits); nothing added.
	DiscontinuityImplausible = "implausible"
)

// DiscontinuityKinds lists every kind, so that counters can start at 0.
var DiscontinuityKinds = []string{DiscontinuityReset, DiscontinuityGlitch, DiscontinuityLayoutChange, DiscontinuityLayoutUnstable, DiscontinuityImplausible}

func (e event) kind() string {
	switch e {
	case eventReset:
		return DiscontinuityReset
	case eventGlitch:
		return DiscontinuityGlitch
	case eventLayout:
		return DiscontinuityLayoutChange
	case eventImplausible:
		return DiscontinuityImplausible
	}
	return ""
}

// glitchRebase is how many snapshots in a row a series may stay below its
// baseline before that lower value becomes the baseline.
const glitchRebase = 3

// Layout churn: a histogram whose bucket bounds changed more than
// layoutChangesAllowed times in its last layoutWindow snapshots is left out
// of SLO judging until it is stable again.
const (
	layoutWindow         = 10
	layoutChangesAllowed = 2
)

// freshStart reports whether a series that went from old to v may have
// started again from zero: the engine lost at least half of it.
func freshStart(old, v float64) bool { return v <= old/2 }

// histTrack follows one histogram of one model.
type histTrack struct {
	seen   bool
	failed bool // the family was present but unusable before it was first seen
	bounds []float64
	cum    []float64
	count  float64
	sum    float64
	low    int    // snapshots in a row below the baseline
	high   int    // snapshots in a row implausibly above it
	churn  uint16 // one bit per snapshot that had the histogram: layout changed
	pace   pace
	// perToken: the histogram observes once per token (inter-token
	// latency), so its count is held to the token ceiling.
	perToken bool

	ok       bool // an increase is available for the last snapshot
	skip     bool // the last snapshot's increase is unusable (glitch, layout)
	unstable bool // the layout keeps changing: left out of judging
	dcum     []float64
	dcount   float64
	dsum     float64 // increase of the sum, never negative
}

func (t *histTrack) advance(h *snapshot.Histogram, md mode) event {
	t.ok, t.skip = false, false
	if h == nil || len(h.Cumulative) != len(h.Bounds) {
		// Absent this time (or malformed): keep the baseline, so that the
		// next snapshot that has it measures from the last one that did.
		return eventNone
	}
	changed := t.seen && !slices.Equal(t.bounds, h.Bounds)
	t.churn <<= 1
	if changed {
		t.churn |= 1
	}
	t.churn &= 1<<layoutWindow - 1
	t.unstable = bits.OnesCount16(t.churn) > layoutChangesAllowed
	dt := t.pace.seconds(md)
	ev, rise := eventNone, false
	switch {
	case md.baseline:
	case !t.seen:
		if !t.failed {
			t.diff(h, false)
		}
	case md.restarted:
		t.diff(h, false)
	case changed:
		// A reset of this histogram alone. Its counts are the increase
		// only if it may have started again; otherwise they are of
		// unknown age under the new bounds and only set the baseline.
		ev = eventLayout
		if !md.noReset && freshStart(t.count, h.Count) {
			t.diff(h, false)
		} else {
			t.zero(h)
		}
	case h.Count >= t.count:
		t.diff(h, true)
		rise = true
	case !md.noReset && freshStart(t.count, h.Count):
		ev = eventReset
		t.diff(h, false)
	default:
		ev = eventGlitch
		t.zero(h)
		if t.low++; t.low < glitchRebase {
			return ev // keep the higher baseline
		}
	}
	ceiling := md.lim.RequestsPerSecond
	if t.perToken {
		ceiling = md.lim.TokensPerSecond
	}
	if t.ok && !t.skip && t.pace.implausible(t.dcount, dt, ceiling) {
		ev = eventImplausible
		t.zero(h)
		if t.high++; rise && t.high < glitchRebase {
			return ev // keep the lower baseline
		}
	}
	if ev != eventGlitch {
		t.low = 0
	}
	if ev != eventImplausible {
		t.high = 0
		if t.ok && !t.skip {
			t.pace.note(t.dcount, dt)
		}
	}
	t.pace.at = md.now
	if t.unstable {
		t.ok = false
	}
	t.seen = true
	if !slices.Equal(t.bounds, h.Bounds) {
		t.bounds = append(t.bounds[:0], h.Bounds...)
	}
	t.cum = append(t.cum[:0], h.Cumulative...)
	t.count = h.Count
	t.sum = h.Sum
	return ev
}

// zero records an interval whose increase cannot be used.
func (t *histTrack) zero(h *snapshot.Histogram) {
	t.dcum = t.dcum[:0]
	for range h.Bounds {
		t.dcum = append(t.dcum, 0)
	}
	t.dcount, t.dsum = 0, 0
	t.ok, t.skip = true, true
}

// diff stores h minus the baseline (or h itself), clamped to a consistent
// histogram: buckets never below the previous one nor above the count, and
// nothing negative. Engines read a histogram's buckets and count without a
// lock, so a scrape can be off by the requests that finished meanwhile;
// clamping keeps that from turning into negative or impossible increases.
func (t *histTrack) diff(h *snapshot.Histogram, sub bool) {
	total := h.Count
	if sub {
		total -= t.count
	}
	if !(total > 0) {
		total = 0
	}
	t.dcum = t.dcum[:0]
	prev := 0.0
	for i, c := range h.Cumulative {
		if sub {
			c -= t.cum[i]
		}
		// Clamp into [prev, total]. Written as comparisons because Go's
		// min and max propagate NaN; this way a NaN becomes prev.
		if !(c >= prev) {
			c = prev
		}
		if c > total {
			c = total
		}
		t.dcum = append(t.dcum, c)
		prev = c
	}
	t.dcount = total
	t.dsum = h.Sum
	if sub {
		t.dsum -= t.sum
	}
	if !(t.dsum > 0) || total == 0 {
		t.dsum = 0
	}
	t.ok = true
}

// counterTrack follows one counter of one model.
type counterTrack struct {
	seen   bool
	failed bool
	v      float64
	low    int // snapshots in a row below the baseline
	high   int // snapshots in a row implausibly above it
	pace   pace
	ok     bool
	delta  float64
}

func (t *counterTrack) advance(v snapshot.Value, md mode) event {
	t.ok = false
	if !v.OK {
		return eventNone
	}
	dt := t.pace.seconds(md)
	ev, rise := eventNone, false
	switch {
	case md.baseline:
	case !t.seen:
		t.ok, t.delta = !t.failed, v.V
	case md.restarted:
		t.ok, t.delta = true, v.V
	case v.V >= t.v:
		t.ok, t.delta, rise = true, v.V-t.v, true
	case !md.noReset && freshStart(t.v, v.V):
		ev = eventReset
		t.ok, t.delta = true, v.V
	default:
		ev = eventGlitch
		t.ok, t.delta = true, 0
		if t.low++; t.low < glitchRebase {
			return ev // keep the higher baseline
		}
	}
	if !(t.delta > 0) {
		t.delta = 0
	}
	if t.ok && t.pace.implausible(t.delta, dt, md.lim.TokensPerSecond) {
		ev, t.delta = eventImplausible, 0
		if t.high++; rise && t.high < glitchRebase {
			return ev // keep the lower baseline
		}
	}
	if ev != eventGlitch {
		t.low = 0
	}
	if ev != eventImplausible {
		t.high = 0
		if t.ok {
			t.pace.note(t.delta, dt)
		}
	}
	t.pace.at = md.now
	t.seen, t.v = true, v.V
	return ev
}

// finishedTrack follows the finish-reason counters of one model and sums
// their increase into the totals the error objective needs.
type finishedTrack struct {
	base   map[string]float64 // nil until the model first reports reasons
	low    map[string]int     // per reason: snapshots in a row below the baseline
	high   int                // snapshots in a row implausibly above the baselines
	pace   pace               // of the total over every reason
	failed bool

	ok                    bool
	skip                  bool // a reason glitched: the interval is unusable
	total, errors, aborts float64
}

func (t *finishedTrack) advance(m map[string]float64, md mode) event {
	t.ok, t.skip, t.total, t.errors, t.aborts = false, false, 0, 0, 0
	if m == nil {
		return eventNone
	}
	first := t.base == nil
	if first {
		t.base = make(map[string]float64, len(m))
	}
	t.ok = !md.baseline && (!first || !t.failed)
	dt := t.pace.seconds(md)
	if t.ok {
		// The interval's increase over every reason, before any baseline
		// moves: an implausible one leaves them where they were.
		sum, rise := 0.0, !first && !md.restarted
		for r, v := range m {
			old, had := t.base[r]
			switch {
			case !had || md.restarted:
				sum += v
			case v >= old:
				sum += v - old
			case !md.noReset && freshStart(old, v):
				sum, rise = sum+v, false
			}
		}
		if t.pace.implausible(sum, dt, md.lim.RequestsPerSecond) {
			t.skip = true
			if t.high++; rise && t.high < glitchRebase {
				return eventImplausible // keep the lower baselines
			}
			clear(t.base)
			for r, v := range m {
				t.base[r] = v
			}
			clear(t.low)
			t.pace.at = md.now
			return eventImplausible
		}
		t.high = 0
	}
	worst := eventNone
	for r, v := range m {
		old, had := t.base[r]
		// A reason never seen on a known model is a label child created by
		// its first increment, so all of it is new.
		d := v
		switch {
		case md.baseline || !had || md.restarted:
			delete(t.low, r)
		case v >= old:
			d = v - old
			delete(t.low, r)
		case !md.noReset && freshStart(old, v):
			worst = max(worst, eventReset)
			delete(t.low, r)
		default:
			worst = eventGlitch
			d = 0
			if t.low == nil {
				t.low = map[string]int{}
			}
			if t.low[r]++; t.low[r] < glitchRebase {
				continue // keep the higher baseline
			}
			delete(t.low, r)
		}
		t.base[r] = v
		if !t.ok || !(d > 0) {
			continue
		}
		t.total += d
		switch r {
		case ReasonError:
			t.errors += d
		case ReasonAbort:
			t.aborts += d
		}
	}
	if worst == eventGlitch && t.ok {
		// One reason's increase is unknown, so the interval's error ratio
		// is too: judge nothing rather than a ratio without that reason.
		t.skip = true
		t.total, t.errors, t.aborts = 0, 0, 0
	}
	if t.ok && !t.skip {
		t.pace.note(t.total, dt)
	}
	t.pace.at = md.now
	return worst
}
