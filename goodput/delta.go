package goodput

import (
	"slices"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// The trackers below keep the previous cumulative value of one series and,
// after advance, the reset-aware increase since it. Their buffers are reused
// so that a steady target costs no allocations.
//
// fresh says what the first value of a series means: counts since the
// previous snapshot (a target that restarted, a model loaded while the
// target runs) or counts of unknown age (the first snapshot of a target)
// that only set the baseline.

// histTrack follows one histogram of one model.
type histTrack struct {
	seen   bool
	bounds []float64
	cum    []float64
	count  float64

	ok     bool // an increase is available for the last snapshot
	dcum   []float64
	dcount float64
}

func (t *histTrack) advance(h *snapshot.Histogram, restarted, fresh bool) {
	t.ok = false
	if h == nil || len(h.Cumulative) != len(h.Bounds) {
		// Absent this time (or malformed): keep the baseline, so that the
		// next snapshot that has it measures from the last one that did.
		return
	}
	switch {
	case !t.seen:
		if fresh {
			t.diff(h, false)
		}
	case restarted || !slices.Equal(t.bounds, h.Bounds) || h.Count < t.count:
		t.diff(h, false)
	default:
		t.diff(h, true)
	}
	t.seen = true
	if !slices.Equal(t.bounds, h.Bounds) {
		t.bounds = append(t.bounds[:0], h.Bounds...)
	}
	t.cum = append(t.cum[:0], h.Cumulative...)
	t.count = h.Count
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
	t.ok = true
}

// counterTrack follows one counter of one model.
type counterTrack struct {
	seen  bool
	v     float64
	ok    bool
	delta float64
}

func (t *counterTrack) advance(v snapshot.Value, restarted, fresh bool) {
	t.ok = false
	if !v.OK {
		return
	}
	switch {
	case !t.seen:
		t.ok, t.delta = fresh, v.V
	case restarted || v.V < t.v:
		t.ok, t.delta = true, v.V
	default:
		t.ok, t.delta = true, v.V-t.v
	}
	if !(t.delta > 0) {
		t.delta = 0
	}
	t.seen, t.v = true, v.V
}

// finishedTrack follows the finish-reason counters of one model and sums
// their increase into the totals the error objective needs.
type finishedTrack struct {
	base map[string]float64 // nil until the model first reports reasons

	ok                    bool
	total, errors, aborts float64
}

func (t *finishedTrack) advance(m map[string]float64, restarted, fresh bool) {
	t.ok, t.total, t.errors, t.aborts = false, 0, 0, 0
	if m == nil {
		return
	}
	first := t.base == nil
	if first {
		t.base = make(map[string]float64, len(m))
	}
	t.ok = !first || fresh
	for r, v := range m {
		old, had := t.base[r]
		t.base[r] = v
		if !t.ok {
			continue
		}
		// A reason never seen on a known model is a label child created by
		// its first increment, so all of it is new.
		d := v
		if had && !restarted && v >= old {
			d = v - old
		}
		if !(d > 0) {
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
}
