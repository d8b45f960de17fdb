package history

import (
	"math"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// 15 minutes of points plus the one at the start, bounded at both ends.
func TestHistoryCap(t *testing.T) {
	for _, c := range []struct {
		interval time.Duration
		want     int
	}{
		{time.Second, 901},             // 900 s / 1 s + 1
		{15 * time.Second, 61},         // 900 / 15 + 1
		{7 * time.Second, 130},         // ceil(900 / 7) = 129, + 1
		{100 * time.Millisecond, 1800}, // 9001, capped
		{time.Hour, 2},                 // ceil(0.25) = 1, + 1
		{0, MaxPoints},                 // no interval known
	} {
		if got := Cap(c.interval); got != c.want {
			t.Errorf("Cap(%v) = %d, want %d", c.interval, got, c.want)
		}
	}
	// The README's memory figure: a time.Time (24 bytes) and five
	// float64 (40 bytes) per point.
	if n := unsafe.Sizeof(Point{}); n != 64 {
		t.Errorf("a point is %d bytes, the README says 64", n)
	}
}

// The ring keeps the newest points, oldest first, and never grows past
// its capacity; a smaller capacity keeps the newest.
func TestHistoryRingKeepsNewest(t *testing.T) {
	h := New(7*time.Minute + 30*time.Second) // 900/450 + 1 = 3 points
	t0 := time.Unix(1000, 0)
	for i := 1; i <= 5; i++ {
		p := Point{At: t0.Add(time.Duration(i) * time.Second)}
		p.V[0] = float64(i)
		h.add(p)
		if len(h.pts) > 3 {
			t.Fatalf("%d points kept, capacity 3", len(h.pts))
		}
	}
	var got []float64
	for _, p := range h.Points() {
		got = append(got, p.V[0])
	}
	if want := []float64{3, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("points %v, want %v", got, want)
	}
	h.Resize(10 * time.Minute) // 900/600 -> 2, + 1 = 3: unchanged
	h.Resize(time.Hour)        // 2 points
	got = nil
	for _, p := range h.Points() {
		got = append(got, p.V[0])
	}
	if want := []float64{4, 5}; !slices.Equal(got, want) {
		t.Errorf("after resize to 2: %v, want %v", got, want)
	}
}

// Worked by hand: a 100 s span in a 100×50 box. The point 150 s ago is
// outside; 100 s ago (x 0) value 0 (y 50); 50 s ago missing, which breaks
// the line; 25 s ago (x 75) value 2 and now (x 100) value 4, the top of
// the scale: y 25 and 0.
func TestChartPath(t *testing.T) {
	now := time.Unix(10000, 0)
	at := func(ago, v float64) Point {
		p := Point{At: now.Add(-time.Duration(ago * float64(time.Second)))}
		for i := range p.V {
			p.V[i] = math.NaN()
		}
		p.V[1] = v
		return p
	}
	pts := []Point{at(150, 9), at(100, 0), at(50, math.NaN()), at(25, 2), at(0, 4)}
	path, last, top, ok := Path(pts, 1, false, now, 100*time.Second, 100, 50)
	if want := "M0 50 M75 25 L100 0"; path != want || last != 4 || top != 4 || !ok {
		t.Errorf("Path = %q, last %v, top %v, %v; want %q, 4, 4, true", path, last, top, ok, want)
	}
	// A ratio has a fixed scale: 0.5 at x 75 sits half way, y 25; 1 at
	// x 100 at the top.
	pts = []Point{at(25, 0.5), at(0, 1)}
	if path, _, top, _ := Path(pts, 1, true, now, 100*time.Second, 100, 50); path != "M75 25 L100 0" || top != 1 {
		t.Errorf("ratio Path = %q, top %v; want \"M75 25 L100 0\", 1", path, top)
	}
	// Nothing in the span: no path.
	if _, _, _, ok := Path([]Point{at(150, 1)}, 1, false, now, 100*time.Second, 100, 50); ok {
		t.Error("a point outside the span was charted")
	}
}

// What each cycle records: gauges summed over models (the cache: the
// fullest), generation tokens per second between two successful scrapes
// of one process, gaps after a failure and across a restart.
func TestHistoryRecord(t *testing.T) {
	model := func(name string, running, waiting, kv, gen float64) snapshot.Model {
		m := snapshot.Model{Name: name}
		m.Gauges[snapshot.Running] = snapshot.Value{V: running, OK: true}
		m.Gauges[snapshot.Waiting] = snapshot.Value{V: waiting, OK: true}
		m.Gauges[snapshot.KVCacheUsage] = snapshot.Value{V: kv, OK: true}
		m.Counters[snapshot.GenerationTokens] = snapshot.Value{V: gen, OK: true}
		return m
	}
	t0 := time.Unix(5000, 0)
	h := New(time.Second)
	h.Record(t0, &snapshot.Snapshot{Models: []snapshot.Model{model("a", 2, 1, 0.3, 100), model("b", 3, 0, 0.6, 50)}}, nil)
	h.Record(t0.Add(2*time.Second), &snapshot.Snapshot{Models: []snapshot.Model{model("a", 1, 4, 0.2, 130), model("b", 1, 0, 0.1, 80)}}, nil)
	h.Record(t0.Add(3*time.Second), nil, nil)
	h.Record(t0.Add(4*time.Second), &snapshot.Snapshot{Models: []snapshot.Model{model("a", 1, 0, 0.2, 200)}}, nil)
	h.Record(t0.Add(5*time.Second), &snapshot.Snapshot{Restarted: true, Models: []snapshot.Model{model("a", 1, 0, 0.2, 5)}}, nil)
	h.Record(t0.Add(7*time.Second), &snapshot.Snapshot{Models: []snapshot.Model{model("a", 1, 0, 0.2, 25)}}, nil)
	pts := h.Points()
	nan := math.NaN()
	want := [][NumCharts]float64{
		{5, 1, 0.6, nan, nan},
		{2, 4, 0.2, 30, nan}, // (130+80 - (100+50)) / 2 s
		{nan, nan, nan, nan, nan},
		{1, 0, 0.2, nan, nan}, // no rate across the failed scrape
		{1, 0, 0.2, nan, nan}, // nor across a restart
		{1, 0, 0.2, 10, nan},  // (25 - 5) / 2 s
	}
	for i, w := range want {
		for k := range w {
			g := pts[i].V[k]
			if !(g == w[k] || math.IsNaN(g) && math.IsNaN(w[k])) {
				t.Errorf("point %d, %s: %v, want %v", i, Signals[k].Name, g, w[k])
			}
		}
	}
}

// The charts span what is kept, up to 15 minutes: a daemon started 90 s
// ago charts 90 s.
func TestChartSpan(t *testing.T) {
	now := time.Unix(10000, 0)
	for _, c := range []struct {
		oldest time.Duration
		want   time.Duration
	}{{90 * time.Second, 90 * time.Second}, {20 * time.Minute, 15 * time.Minute}, {0, 15 * time.Minute}} {
		if got := Covered([]Point{{At: now.Add(-c.oldest)}}, now); got != c.want {
			t.Errorf("oldest %v ago: span %v, want %v", c.oldest, got, c.want)
		}
	}
	if got := Covered(nil, now); got != Span {
		t.Errorf("no points: span %v, want %v", got, Span)
	}
}
