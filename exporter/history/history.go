// Package history is the ring of a target's recent points that the status
// page charts: per collection cycle the running and waiting requests, the
// fullest KV cache, the generation-token rate and the worst SLO's lower
// goodput bound, over the last Span, at most MaxPoints per target; and the
// SVG paths drawn from them. It reads snapshot and goodput and nothing of
// the daemon; exporter (a target records, the status page draws) depends
// on it, and nothing else should.
package history

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// The status page charts a few signals of each target over the last
// Span, one point per collection cycle, kept in memory.
const (
	Span = 15 * time.Minute
	// MaxPoints bounds a target's history whatever the interval:
	// a 0.5 s interval still covers the span; shorter ones cover less.
	MaxPoints = 1800
)

// Signal is one charted signal.
type Signal struct {
	Name  string
	Ratio bool // a share in 0..1, charted on a fixed 0..100 % scale
}

// The charted signals, the indices of Point.V.
const (
	Running = iota
	Waiting
	KV
	GenRate
	Goodput
	NumCharts
)

var Signals = [NumCharts]Signal{
	Running: {Name: "running requests"},
	Waiting: {Name: "waiting requests"},
	KV:      {Name: "KV-cache usage", Ratio: true},
	GenRate: {Name: "generation tokens/s"},
	Goodput: {Name: "goodput, lower bound", Ratio: true},
}

// Point is one collection cycle; NaN where the signal was absent (a
// failed scrape leaves a gap in every chart).
type Point struct {
	At time.Time
	V  [NumCharts]float64 // indexed by Running, Waiting, ...
}

// Ring is a ring of a target's last points.
type Ring struct {
	pts      []Point
	start    int // index of the oldest point once the ring is full
	capacity int
	// The previous successful scrape's generation-token count, for the
	// rate.
	prevGen float64
	prevAt  time.Time
	prevOK  bool
}

// Cap is how many points cover Span at the interval.
func Cap(interval time.Duration) int {
	if interval <= 0 {
		return MaxPoints
	}
	n := int((Span+interval-1)/interval) + 1
	return min(max(n, 2), MaxPoints)
}

// New is an empty ring sized for the collection interval.
func New(interval time.Duration) *Ring {
	return &Ring{capacity: Cap(interval)}
}

// Resize keeps the newest points that fit a new capacity (a reload that
// changed the interval).
func (h *Ring) Resize(interval time.Duration) {
	c := Cap(interval)
	if c == h.capacity {
		return
	}
	pts := h.Points()
	if len(pts) > c {
		pts = pts[len(pts)-c:]
	}
	h.pts, h.start, h.capacity = pts, 0, c
}

func (h *Ring) add(p Point) {
	if len(h.pts) < h.capacity {
		h.pts = append(h.pts, p)
		return
	}
	h.pts[h.start] = p
	h.start = (h.start + 1) % h.capacity
}

// Points returns the points oldest first.
func (h *Ring) Points() []Point {
	out := make([]Point, 0, len(h.pts))
	out = append(out, h.pts[h.start:]...)
	return append(out, h.pts[:h.start]...)
}

// Record adds a cycle: snap is nil when the scrape failed. tr has folded
// snap already.
func (h *Ring) Record(at time.Time, snap *snapshot.Snapshot, tr *goodput.Tracker) {
	p := Point{At: at}
	for i := range p.V {
		p.V[i] = math.NaN()
	}
	if snap == nil {
		h.prevOK = false
		h.add(p)
		return
	}
	var gen float64
	genOK := false
	for _, m := range snap.Models {
		if g := m.Gauges[snapshot.Running]; g.OK {
			p.V[Running] = nanAdd(p.V[Running], g.V)
		}
		if g := m.Gauges[snapshot.Waiting]; g.OK {
			p.V[Waiting] = nanAdd(p.V[Waiting], g.V)
		}
		if g := m.Gauges[snapshot.KVCacheUsage]; g.OK && !(g.V <= p.V[KV]) {
			p.V[KV] = g.V // the fullest cache of the target's models
		}
		if c := m.Counters[snapshot.GenerationTokens]; c.OK {
			gen += c.V
			genOK = true
		}
	}
	// A rate only between two successful scrapes of one engine process,
	// and not across a count that went down (a model dropped out).
	if genOK && h.prevOK && !snap.Restarted && !snap.Baseline && gen >= h.prevGen && at.After(h.prevAt) {
		p.V[GenRate] = (gen - h.prevGen) / at.Sub(h.prevAt).Seconds()
	}
	h.prevGen, h.prevAt, h.prevOK = gen, at, genOK
	// The worst SLO of the target in the last interval.
	if tr != nil {
		for _, ms := range tr.Models() {
			for _, ss := range ms.SLOs {
				if in := ss.Joint.Interval; ss.Joint.Supported && in.OK && !(in.Attainment.Lower >= p.V[Goodput]) {
					p.V[Goodput] = in.Attainment.Lower
				}
			}
		}
	}
	h.add(p)
}

func nanAdd(a, b float64) float64 {
	if math.IsNaN(a) {
		return b
	}
	return a + b
}

// Path draws signal i of pts as an SVG path in a w×h box: time runs
// from now-span (x=0) to now (x=w), values from 0 (y=h) to the top of the
// scale (y=0): 1 for a ratio, else the largest value shown. A missing
// value breaks the line. It also returns the latest value and the top of
// the scale; ok is false when nothing in the span has a value.
func Path(pts []Point, i int, ratio bool, now time.Time, span time.Duration, w, h float64) (path string, last, top float64, ok bool) {
	from := now.Add(-span)
	top = 0
	last = math.NaN()
	for _, p := range pts {
		if p.At.Before(from) || p.At.After(now) || math.IsNaN(p.V[i]) {
			continue
		}
		top = max(top, p.V[i])
		ok = true
	}
	if !ok {
		return "", last, 0, false
	}
	if ratio || top == 0 {
		top = max(top, 1)
		if ratio {
			top = 1
		}
	}
	var b strings.Builder
	pen := false
	for _, p := range pts {
		if p.At.Before(from) || p.At.After(now) {
			continue
		}
		v := p.V[i]
		last = v
		if math.IsNaN(v) {
			pen = false
			continue
		}
		x := w * float64(p.At.Sub(from)) / float64(span)
		y := h - min(max(v/top, 0), 1)*h
		if pen {
			b.WriteString(" L")
		} else {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString("M")
		}
		b.WriteString(fmtCoord(x) + " " + fmtCoord(y))
		pen = true
	}
	return b.String(), last, top, true
}

func fmtCoord(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// Covered is the time the charts cover: Span, or since the
// oldest point kept when that is younger (a daemon just started), in
// whole seconds.
func Covered(pts []Point, now time.Time) time.Duration {
	if len(pts) == 0 {
		return Span
	}
	s := now.Sub(pts[0].At).Round(time.Second)
	if s <= 0 || s > Span {
		return Span
	}
	return s
}
