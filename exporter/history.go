package exporter

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// The status page charts a few signals of each target over the last
// historySpan, one point per collection cycle, kept in memory.
const (
	historySpan = 15 * time.Minute
	// maxHistoryPoints bounds a target's history whatever the interval:
	// a 0.5 s interval still covers the span; shorter ones cover less.
	maxHistoryPoints = 1800
)

// chartSignal is one charted signal.
type chartSignal struct {
	name  string
	ratio bool // a share in 0..1, charted on a fixed 0..100 % scale
}

// The charted signals, in the order of histPoint.v.
const (
	chRunning = iota
	chWaiting
	chKV
	chGenRate
	chGoodput
	numCharts
)

var chartSignals = [numCharts]chartSignal{
	chRunning: {name: "running requests"},
	chWaiting: {name: "waiting requests"},
	chKV:      {name: "KV-cache usage", ratio: true},
	chGenRate: {name: "generation tokens/s"},
	chGoodput: {name: "goodput, lower bound", ratio: true},
}

// histPoint is one collection cycle; NaN where the signal was absent (a
// failed scrape leaves a gap in every chart).
type histPoint struct {
	at time.Time
	v  [numCharts]float64
}

// history is a ring of a target's last points.
type history struct {
	pts      []histPoint
	start    int // index of the oldest point once the ring is full
	capacity int
	// The previous successful scrape's generation-token count, for the
	// rate.
	prevGen float64
	prevAt  time.Time
	prevOK  bool
}

// historyCap is how many points cover historySpan at the interval.
func historyCap(interval time.Duration) int {
	if interval <= 0 {
		return maxHistoryPoints
	}
	n := int((historySpan+interval-1)/interval) + 1
	return min(max(n, 2), maxHistoryPoints)
}

func newHistory(interval time.Duration) *history {
	return &history{capacity: historyCap(interval)}
}

// resize keeps the newest points that fit a new capacity (a reload that
// changed the interval).
func (h *history) resize(interval time.Duration) {
	c := historyCap(interval)
	if c == h.capacity {
		return
	}
	pts := h.points()
	if len(pts) > c {
		pts = pts[len(pts)-c:]
	}
	h.pts, h.start, h.capacity = pts, 0, c
}

func (h *history) add(p histPoint) {
	if len(h.pts) < h.capacity {
		h.pts = append(h.pts, p)
		return
	}
	h.pts[h.start] = p
	h.start = (h.start + 1) % h.capacity
}

// points returns the points oldest first.
func (h *history) points() []histPoint {
	out := make([]histPoint, 0, len(h.pts))
	out = append(out, h.pts[h.start:]...)
	return append(out, h.pts[:h.start]...)
}

// record adds a cycle: snap is nil when the scrape failed. tr has folded
// snap already.
func (h *history) record(at time.Time, snap *snapshot.Snapshot, tr *goodput.Tracker) {
	p := histPoint{at: at}
	for i := range p.v {
		p.v[i] = math.NaN()
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
			p.v[chRunning] = nanAdd(p.v[chRunning], g.V)
		}
		if g := m.Gauges[snapshot.Waiting]; g.OK {
			p.v[chWaiting] = nanAdd(p.v[chWaiting], g.V)
		}
		if g := m.Gauges[snapshot.KVCacheUsage]; g.OK && !(g.V <= p.v[chKV]) {
			p.v[chKV] = g.V // the fullest cache of the target's models
		}
		if c := m.Counters[snapshot.GenerationTokens]; c.OK {
			gen += c.V
			genOK = true
		}
	}
	// A rate only between two successful scrapes of one engine process,
	// and not across a count that went down (a model dropped out).
	if genOK && h.prevOK && !snap.Restarted && !snap.Baseline && gen >= h.prevGen && at.After(h.prevAt) {
		p.v[chGenRate] = (gen - h.prevGen) / at.Sub(h.prevAt).Seconds()
	}
	h.prevGen, h.prevAt, h.prevOK = gen, at, genOK
	// The worst SLO of the target in the last interval.
	if tr != nil {
		for _, ms := range tr.Models() {
			for _, ss := range ms.SLOs {
				if in := ss.Joint.Interval; ss.Joint.Supported && in.OK && !(in.Attainment.Lower >= p.v[chGoodput]) {
					p.v[chGoodput] = in.Attainment.Lower
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

// chartPath draws signal i of pts as an SVG path in a w×h box: time runs
// from now-span (x=0) to now (x=w), values from 0 (y=h) to the top of the
// scale (y=0): 1 for a ratio, else the largest value shown. A missing
// value breaks the line. It also returns the latest value and the top of
// the scale; ok is false when nothing in the span has a value.
func chartPath(pts []histPoint, i int, ratio bool, now time.Time, span time.Duration, w, h float64) (path string, last, top float64, ok bool) {
	from := now.Add(-span)
	top = 0
	last = math.NaN()
	for _, p := range pts {
		if p.at.Before(from) || p.at.After(now) || math.IsNaN(p.v[i]) {
			continue
		}
		top = max(top, p.v[i])
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
		if p.at.Before(from) || p.at.After(now) {
			continue
		}
		v := p.v[i]
		last = v
		if math.IsNaN(v) {
			pen = false
			continue
		}
		x := w * float64(p.at.Sub(from)) / float64(span)
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
