package collector

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// modelAcc accumulates one model's samples during a parse. It lives as long
// as the model keeps appearing, so a steady target reuses its memory.
type modelAcc struct {
	name  string
	gen   uint32
	vals  []float64 // by source id
	stamp []uint32  // parse generation that last set vals[id]
	hists []*histAcc
	fin   map[string]*finAcc
	// bad marks a source one of whose samples in this parse cannot be
	// part of a sum (NaN, ±Inf, a negative count): the whole family is
	// left out for the model, never summed with the other ranks.
	bad []badMark
}

type badMark struct {
	gen uint32
	msg string
}

type finAcc struct {
	v   float64
	gen uint32
}

func newModelAcc(name string, nsrc int) *modelAcc {
	return &modelAcc{
		name:  name,
		vals:  make([]float64, nsrc),
		stamp: make([]uint32, nsrc),
		hists: make([]*histAcc, nsrc),
		bad:   make([]badMark, nsrc),
	}
}

func (m *modelAcc) hist(id int) *histAcc {
	if m.hists[id] == nil {
		m.hists[id] = &histAcc{}
	}
	return m.hists[id]
}

// combine folds v into cur: the first value of a parse replaces, later ones
// (other ranks) add or take the maximum.
func combine(cur *float64, stamp *uint32, gen uint32, v float64, a agg) {
	switch {
	case *stamp != gen:
		*cur = v
		*stamp = gen
	case a == aggSum:
		*cur += v
	case v > *cur || math.IsNaN(v):
		*cur = v
	}
}

func (m *modelAcc) add(gen uint32, s *slot, v float64) {
	m.gen = gen
	src := s.ref.src
	if msg := invalidSample(s, v, m.hists[src.id]); msg != "" {
		if m.bad[src.id].gen != gen {
			m.bad[src.id] = badMark{gen: gen, msg: msg}
		}
		m.stamp[src.id] = gen
		if s.ref.part == partBucket && s.bucket >= 0 {
			m.hists[src.id].bgen[s.bucket] = gen // still a live bound
		}
		return
	}
	if src.scale != 0 && s.ref.part == partSum {
		v *= src.scale
	}
	switch src.kind {
	case kindGauge, kindCounter, kindAux:
		combine(&m.vals[src.id], &m.stamp[src.id], gen, v, src.agg)
	case kindFinished:
		if m.fin == nil {
			m.fin = map[string]*finAcc{}
		}
		f := m.fin[s.reason]
		if f == nil {
			f = &finAcc{}
			m.fin[s.reason] = f
		}
		combine(&f.v, &f.gen, gen, v, src.agg)
		m.stamp[src.id] = gen
	case kindHist:
		m.hists[src.id].add(gen, s, v, src.agg)
		m.stamp[src.id] = gen
	}
}

// leaveOut leaves source id out of the model in this parse, with msg as
// its family's error (a series of it was not read: see ErrStateBudget).
func (m *modelAcc) leaveOut(gen uint32, id int, msg string) {
	m.gen = gen
	if m.bad[id].gen != gen {
		m.bad[id] = badMark{gen: gen, msg: msg}
	}
	m.stamp[id] = gen
}

// invalidSample says why v cannot be one of the samples a cumulative family
// is built from, or "" when it can. Gauges are checked when the model is
// built, since a gauge may be negative.
func invalidSample(s *slot, v float64, h *histAcc) string {
	src := s.ref.src
	switch src.kind {
	case kindCounter, kindFinished:
		if err := checkCount(v); err != nil {
			if s.reason != "" {
				return fmt.Sprintf("reason %q: %v", s.reason, err)
			}
			return err.Error()
		}
	case kindHist:
		switch s.ref.part {
		case partSum:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Sprintf("_sum is %v", v)
			}
		case partCount:
			if checkCount(v) != nil {
				return fmt.Sprintf("_count is %v", v)
			}
		case partBucket:
			if checkCount(v) != nil {
				if s.bucket < 0 {
					return fmt.Sprintf("bucket le=+Inf holds %v", v)
				}
				return fmt.Sprintf("bucket le=%g holds %v", h.bounds[s.bucket], v)
			}
		}
	}
	return ""
}

// build picks, per contract signal, the first listed source present in
// this parse, checks it, and returns the model with per-family errors.
func (m *modelAcc) build(tab *table, gen uint32) (snapshot.Model, []error) {
	out := snapshot.Model{Name: m.name}
	var errs []error
	fail := func(src *source, err error) {
		errs = append(errs, &FamilyError{Family: src.family, Model: m.name, Err: err})
		switch src.kind {
		case kindCounter:
			out.CounterFailed[src.field] = true
		case kindHist:
			out.HistFailed[src.field] = true
		case kindFinished:
			out.FinishedFailed = true
		}
	}
	var gDone [snapshot.NumGauges]bool
	var cDone [snapshot.NumCounters]bool
	var hDone [snapshot.NumHists]bool
	finDone := false
	for _, src := range tab.sources {
		if m.stamp[src.id] != gen {
			continue
		}
		if m.bad[src.id].gen == gen && m.bad[src.id].msg != "" {
			if done := markDone(src, &gDone, &cDone, &hDone, out.Finished != nil || finDone); !done {
				fail(src, errors.New(m.bad[src.id].msg))
				if src.kind == kindFinished {
					finDone = true
				}
			}
			continue
		}
		v := m.vals[src.id]
		switch src.kind {
		case kindGauge:
			if gDone[src.field] {
				continue
			}
			gDone[src.field] = true
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				fail(src, fmt.Errorf("value is %v", v))
			case v < 0 && src.negativeAbsent:
			default:
				out.Gauges[src.field] = snapshot.Value{V: v, OK: true}
			}
		case kindCounter:
			if cDone[src.field] {
				continue
			}
			cDone[src.field] = true
			if err := checkCount(v); err != nil {
				fail(src, err)
				continue
			}
			out.Counters[src.field] = snapshot.Value{V: v, OK: true}
		case kindFinished:
			if out.Finished != nil || finDone {
				continue
			}
			fin, err := m.finished(gen)
			if err != nil {
				fail(src, err)
				continue
			}
			out.Finished = fin
		case kindHist:
			if hDone[src.field] {
				continue
			}
			hDone[src.field] = true
			h, err := m.hists[src.id].build(gen)
			if err != nil {
				fail(src, err)
				continue
			}
			out.Hists[src.field] = h
			out.HistSource[src.field] = src.family
		}
	}
	if tab.post != nil {
		tab.post(&out, func(name string) (float64, bool) {
			for _, src := range tab.sources {
				if src.kind != kindAux || src.name() != name || m.stamp[src.id] != gen {
					continue
				}
				v := m.vals[src.id]
				if m.bad[src.id].gen == gen && m.bad[src.id].msg != "" || math.IsNaN(v) || math.IsInf(v, 0) {
					return 0, false
				}
				return v, true
			}
			return 0, false
		})
	}
	return out, errs
}

// markDone records that src's contract signal is settled (a bad family
// is not replaced by a later, lower-preference one) and reports whether it
// already was.
func markDone(src *source, g *[snapshot.NumGauges]bool, c *[snapshot.NumCounters]bool, h *[snapshot.NumHists]bool, fin bool) bool {
	var flag *bool
	switch src.kind {
	case kindGauge:
		flag = &g[src.field]
	case kindCounter:
		flag = &c[src.field]
	case kindHist:
		flag = &h[src.field]
	default:
		return fin
	}
	was := *flag
	*flag = true
	return was
}

func (m *modelAcc) finished(gen uint32) (map[string]float64, error) {
	out := make(map[string]float64, len(m.fin))
	for reason, f := range m.fin {
		if f.gen != gen {
			continue
		}
		if err := checkCount(f.v); err != nil {
			return nil, fmt.Errorf("reason %q: %w", reason, err)
		}
		out[reason] = f.v
	}
	return out, nil
}

func checkCount(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("counter value is %v", v)
	}
	return nil
}

// maxBounds caps the distinct bucket bounds of one histogram: engines use
// fewer than 40, and a body with thousands (changing between scrapes)
// would otherwise grow the parser's state without bound.
const maxBounds = 256

// overflowBucket marks a bucket series learnt after its histogram reached
// maxBounds: its samples only flag the histogram.
const overflowBucket = -2

// histAcc accumulates one classic histogram. Bounds are kept in the order
// first seen; build sorts them. index finds a bound's slot in O(1).
type histAcc struct {
	bounds  []float64
	counts  []float64
	bgen    []uint32
	index   map[float64]int
	inf     float64
	sum     float64
	count   float64
	infGen  uint32
	sumGen  uint32
	cntGen  uint32
	overGen uint32 // parse in which a bucket beyond maxBounds was seen
}

// boundIndex returns the slot of bound b, adding one; ok is false when the
// histogram already holds maxBounds bounds.
func (h *histAcc) boundIndex(b float64) (int, bool) {
	if i, ok := h.index[b]; ok {
		return i, true
	}
	if len(h.bounds) >= maxBounds {
		return 0, false
	}
	if h.index == nil {
		h.index = map[float64]int{}
	}
	h.bounds = append(h.bounds, b)
	h.counts = append(h.counts, 0)
	h.bgen = append(h.bgen, 0)
	h.index[b] = len(h.bounds) - 1
	return len(h.bounds) - 1, true
}

// compact drops the bounds not seen in parse gen (a layout the engine no
// longer uses) and returns where each old slot went (-1: dropped), or nil
// when nothing was dropped.
func (h *histAcc) compact(gen uint32) []int {
	stale := false
	for _, g := range h.bgen {
		if g != gen {
			stale = true
			break
		}
	}
	if !stale {
		return nil
	}
	moved := make([]int, len(h.bounds))
	keep := 0
	clear(h.index)
	for i := range h.bounds {
		if h.bgen[i] != gen {
			moved[i] = -1
			continue
		}
		h.bounds[keep], h.counts[keep], h.bgen[keep] = h.bounds[i], h.counts[i], h.bgen[i]
		h.index[h.bounds[keep]] = keep
		moved[i] = keep
		keep++
	}
	h.bounds, h.counts, h.bgen = h.bounds[:keep], h.counts[:keep], h.bgen[:keep]
	return moved
}

func (h *histAcc) add(gen uint32, s *slot, v float64, a agg) {
	switch s.ref.part {
	case partBucket:
		switch {
		case s.bucket == overflowBucket:
			h.overGen = gen
		case s.bucket < 0:
			combine(&h.inf, &h.infGen, gen, v, a)
		default:
			combine(&h.counts[s.bucket], &h.bgen[s.bucket], gen, v, a)
		}
	case partSum:
		combine(&h.sum, &h.sumGen, gen, v, a)
	case partCount:
		combine(&h.count, &h.cntGen, gen, v, a)
	}
}

func (h *histAcc) build(gen uint32) (*snapshot.Histogram, error) {
	if h.overGen == gen {
		return nil, fmt.Errorf("more than %d distinct bucket bounds: engines use a few dozen, so the histogram is left out", maxBounds)
	}
	var missing []string
	if h.infGen != gen {
		missing = append(missing, "+Inf bucket")
	}
	if h.sumGen != gen {
		missing = append(missing, "_sum")
	}
	if h.cntGen != gen {
		missing = append(missing, "_count")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("histogram cut short: no %v", missing)
	}
	out := &snapshot.Histogram{Count: h.count, Sum: h.sum}
	for i, b := range h.bounds {
		if h.bgen[i] == gen {
			out.Bounds = append(out.Bounds, b)
			out.Cumulative = append(out.Cumulative, h.counts[i])
		}
	}
	sort.Sort(byBound{out})
	prev := 0.0
	for i, c := range out.Cumulative {
		if err := checkCount(c); err != nil {
			return nil, fmt.Errorf("bucket le=%g: %w", out.Bounds[i], err)
		}
		if c < prev {
			return nil, fmt.Errorf("bucket le=%g holds %g, fewer than the bucket below it (%g): buckets must be cumulative", out.Bounds[i], c, prev)
		}
		prev = c
	}
	if err := checkCount(h.inf); err != nil {
		return nil, fmt.Errorf("+Inf bucket: %w", err)
	}
	if h.inf < prev {
		return nil, fmt.Errorf("+Inf bucket holds %g, fewer than the last finite bucket (%g)", h.inf, prev)
	}
	// Written so that a NaN count fails: NaN compares false either way.
	if !(math.Abs(h.count-h.inf) <= 1e-9*math.Max(1, h.inf)) {
		return nil, fmt.Errorf("_count is %g but the +Inf bucket is %g", h.count, h.inf)
	}
	if math.IsNaN(h.sum) || math.IsInf(h.sum, 0) {
		return nil, fmt.Errorf("_sum is %v", h.sum)
	}
	return out, nil
}

type byBound struct{ h *snapshot.Histogram }

func (b byBound) Len() int           { return len(b.h.Bounds) }
func (b byBound) Less(i, j int) bool { return b.h.Bounds[i] < b.h.Bounds[j] }
func (b byBound) Swap(i, j int) {
	b.h.Bounds[i], b.h.Bounds[j] = b.h.Bounds[j], b.h.Bounds[i]
	b.h.Cumulative[i], b.h.Cumulative[j] = b.h.Cumulative[j], b.h.Cumulative[i]
}
