package goodput

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"testing/quick"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// byteSource draws choices from fuzz input; past its end it yields zeros.
type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) n(mod int) int {
	if s.i >= len(s.b) {
		return 0
	}
	v := int(s.b[s.i])
	s.i++
	return v % mod
}

func (s *byteSource) done() bool { return s.i >= len(s.b) }

// randomBounds returns 1..12 strictly ascending positive bounds.
func randomBounds(src *byteSource) []float64 {
	n := 1 + src.n(12)
	b := make([]float64, n)
	v := 0.0
	for i := range b {
		v += float64(1+src.n(50)) / 100
		b[i] = v
	}
	return b
}

// randomThreshold is on a bound, between two, under the first or above the last.
func randomThreshold(src *byteSource, bounds []float64) float64 {
	i := src.n(len(bounds))
	switch src.n(4) {
	case 0:
		return bounds[i]
	case 1:
		return bounds[len(bounds)-1] * 2
	case 2:
		return bounds[0] / 2
	}
	if i+1 < len(bounds) {
		return (bounds[i] + bounds[i+1]) / 2
	}
	return bounds[i] + 0.01
}

func TestGoodAtProperties(t *testing.T) {
	f := func(data []byte) bool {
		src := &byteSource{b: data}
		bounds := randomBounds(src)
		cum := make([]float64, len(bounds))
		c := 0.0
		for i := range cum {
			c += float64(src.n(20))
			cum[i] = c
		}
		count := c + float64(src.n(20))
		t1, t2 := randomThreshold(src, bounds), randomThreshold(src, bounds)
		if t1 > t2 {
			t1, t2 = t2, t1
		}
		g1, i1 := GoodAt(bounds, cum, count, t1)
		g2, _ := GoodAt(bounds, cum, count, t2)
		// Surely good: everything under the largest bound <= t; at most
		// everything under the smallest bound >= t.
		j := sort.SearchFloat64s(bounds, t1)
		lo, hi := 0.0, count
		if j < len(bounds) {
			hi = cum[j]
		}
		if j < len(bounds) && bounds[j] == t1 {
			lo = cum[j]
		} else if j > 0 {
			lo = cum[j-1]
		}
		ok := 0 <= g1 && g1 <= count && lo-1e-9 <= g1 && g1 <= hi+1e-9 &&
			0 <= i1 && i1 <= count && g1 <= g2+1e-9
		if !ok {
			t.Logf("bounds %v cum %v count %v: GoodAt(%v) = %v, %v (want in [%v, %v]); GoodAt(%v) = %v", bounds, cum, count, t1, g1, i1, lo, hi, t2, g2)
		}
		return ok
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
}

// fakeEngine is a target whose counters move at random: traffic, resets
// (flagged or not), bucket layout changes, families and models that go
// missing, and scrapes whose count lags their buckets.
type fakeEngine struct {
	bounds [snapshot.NumHists][]float64
	counts [2][snapshot.NumHists][]float64 // per model, per bucket, last = +Inf
	fin    [2]map[string]float64
	tokens [2]float64
}

func (e *fakeEngine) step(src *byteSource) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Target: "t"}
	restart := src.n(8) == 0
	s.Restarted = restart && src.n(2) == 0
	for mi, name := range []string{"a", "b"} {
		if src.n(10) == 0 {
			continue // missing from this scrape
		}
		m := snapshot.Model{Name: name}
		if e.fin[mi] == nil || restart {
			e.fin[mi] = map[string]float64{}
			e.tokens[mi] = 0
		}
		for h := range e.counts[mi] {
			if e.bounds[h] == nil || src.n(16) == 0 {
				e.bounds[h] = randomBounds(src) // new layout for every model
			}
			if len(e.counts[mi][h]) != len(e.bounds[h])+1 || restart {
				e.counts[mi][h] = make([]float64, len(e.bounds[h])+1)
			}
			c := e.counts[mi][h]
			for range src.n(6) {
				c[src.n(len(c))]++
			}
			if src.n(7) == 0 {
				continue // family failed to parse
			}
			hs := &snapshot.Histogram{Bounds: e.bounds[h], Cumulative: make([]float64, len(e.bounds[h]))}
			acc := 0.0
			for i := range hs.Cumulative {
				acc += c[i]
				hs.Cumulative[i] = acc
			}
			hs.Count = acc + c[len(c)-1]
			if src.n(9) == 0 {
				hs.Count = max(0, hs.Count-float64(1+src.n(3))) // read while requests finished
			}
			m.Hists[h] = hs
		}
		for _, r := range []string{"stop", "length", "error", "abort"} {
			e.fin[mi][r] += float64(src.n(4))
		}
		e.tokens[mi] += float64(src.n(100))
		if src.n(5) != 0 {
			m.Finished = maps(e.fin[mi])
		}
		m.Counters[snapshot.GenerationTokens] = snapshot.Value{V: e.tokens[mi], OK: src.n(6) != 0}
		s.Models = append(s.Models, m)
	}
	return s
}

func maps(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// checkSequence feeds a random sequence of snapshots to a tracker and
// checks what must hold whatever the input: attainments in [0,1], no
// interval count negative or NaN, lower <= upper, totals never decreasing.
func checkSequence(t *testing.T, data []byte) {
	src := &byteSource{b: data}
	probe := randomBounds(src)
	var slos []SLO
	for i, name := range []string{"x", "y", "z"} {
		slo := SLO{Name: name}
		for _, k := range []Kind{KindTTFT, KindTPOT, KindITL, KindE2E, KindQueue, KindError} {
			if src.n(3) == 0 && i > 0 {
				continue
			}
			o := Objective{Kind: k, Target: 0.9, IncludeAbort: src.n(2) == 0 && k == KindError}
			if k != KindError {
				o.Threshold = randomThreshold(src, probe)
			}
			slo.Objectives = append(slo.Objectives, o)
		}
		slos = append(slos, slo)
	}
	tr := NewTracker("t", slos)
	e := &fakeEngine{}
	prev := map[string][]float64{}
	for step := 0; step < 40 && !src.done(); step++ {
		if err := tr.Update(e.step(src)); err != nil {
			t.Fatal(err)
		}
		for _, m := range tr.Models() {
			for _, s := range m.SLOs {
				key := m.Model + "/" + s.SLO
				var totals []float64
				for _, o := range s.Objectives {
					in := o.Interval
					if p, ok := in.Attainment(); ok && !(p >= 0 && p <= 1) {
						t.Fatalf("step %d %s %s: attainment %v", step, key, o.Objective.Kind, p)
					}
					if !(in.Judged >= 0 && in.Good >= 0 && in.Good <= in.Judged && in.Interpolated >= 0 && in.Interpolated <= in.Judged && in.Aborted >= 0) {
						t.Fatalf("step %d %s %s: interval %+v", step, key, o.Objective.Kind, in)
					}
					totals = append(totals, o.Total.Judged, o.Total.Good, o.Total.Interpolated, o.Total.Aborted)
				}
				j := s.Joint
				a := j.Interval.Attainment
				if !(a.Lower >= 0 && a.Lower <= a.Upper && a.Upper <= 1) && j.Interval.OK {
					t.Fatalf("step %d %s: joint attainment %+v", step, key, a)
				}
				for _, b := range []Bounds{j.Total.Requests, j.Total.Tokens} {
					if !(b.Lower >= 0 && b.Lower <= b.Upper+1e-9*b.Upper) {
						t.Fatalf("step %d %s: joint totals %+v", step, key, j.Total)
					}
				}
				totals = append(totals, j.Total.Requests.Lower, j.Total.Requests.Upper, j.Total.Tokens.Lower, j.Total.Tokens.Upper)
				for i, v := range totals {
					if math.IsNaN(v) || (prev[key] != nil && v < prev[key][i]) {
						t.Fatalf("step %d %s: total %d went from %v to %v", step, key, i, prev[key][i], v)
					}
				}
				prev[key] = totals
			}
		}
	}
}

func FuzzTrackerSequence(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 8 {
		b := make([]byte, 600)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(checkSequence)
}

func TestTrackerSequenceProperties(t *testing.T) {
	f := func(seed uint64) bool {
		rng := rand.New(rand.NewPCG(seed, 5))
		b := make([]byte, 4000)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		checkSequence(t, b)
		return !t.Failed()
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 300}); err != nil {
		t.Error(err)
	}
}
