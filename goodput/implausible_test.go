package goodput

import (
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// scaled returns m with every cumulative value times f: k identical
// requests are one request's histograms and counters times k.
func scaled(m snapshot.Model, f float64) snapshot.Model {
	out := m
	for h, src := range m.Hists {
		if src == nil {
			continue
		}
		c := *src
		c.Cumulative = make([]float64, len(src.Cumulative))
		for i, v := range src.Cumulative {
			c.Cumulative[i] = v * f
		}
		c.Count, c.Sum = src.Count*f, src.Sum*f
		out.Hists[h] = &c
	}
	out.Finished = map[string]float64{}
	for r, v := range m.Finished {
		out.Finished[r] = v * f
	}
	for c := range m.Counters {
		out.Counters[c].V *= f
	}
	return out
}

// Increases no engine could have made, with ceilings of 100 requests and
// 1,000 tokens a second and a 5 s interval (so 500 requests and 5,000
// tokens an interval, more over a longer time since the baseline). Every
// request is fast (TTFT 0.1 s under 0.5 s) with 5 tokens (4 inter-token
// latencies, held to the token ceiling), snapshots 5 s apart; the totals
// are worked by hand.
func TestTrackerImplausibleIncrease(t *testing.T) {
	one := vllmLike("m").render(same(req{ttft: 0.1, tokens: 5}, 1))
	t0 := time.Unix(1_700_000_000, 0)
	tr := NewTracker("t", []SLO{ttftSLO("chat", 0.5)})
	tr.SetLimits(Limits{RequestsPerSecond: 100, TokensPerSecond: 1000, Interval: 5 * time.Second})
	steps := []struct {
		name      string
		k         float64 // requests the engine reports
		restarted bool
		judged    float64 // judged so far
		kind      string  // the discontinuity, if any
		series    int     // how many series report it
	}{
		{"baseline", 1000, false, 0, "", 0},
		{"40 more", 1040, false, 40, "", 0},
		// A copy a thousand times the original read first: 1,038,960
		// requests in 5 s against 500 at most.
		{"x1000 copy", 1_040_000, false, 40, DiscontinuityImplausible, 7},
		// The lower baseline was kept: back to the original is +40.
		{"original again", 1080, false, 80, "", 0},
		// 600 in 5 s is more than 500: rejected for the five request
		// series; the 3,000 tokens and 2,400 inter-token latencies are
		// under 5,000 ...
		{"a burst", 1680, false, 80, DiscontinuityImplausible, 5},
		// ... but 640 over the 10 s since the baseline is under 1,000.
		{"the burst spread out", 1720, false, 720, "", 0},
		// A new level that stays: rejected twice (98,280 in 5 s; 98,320
		// in 10 s), the third time it becomes the baseline, adding nothing.
		{"new level 1", 100_000, false, 720, DiscontinuityImplausible, 7},
		{"new level 2", 100_040, false, 720, DiscontinuityImplausible, 7},
		{"new level 3: rebased", 100_080, false, 720, DiscontinuityImplausible, 7},
		{"40 more than the new level", 100_120, false, 760, "", 0},
		// A restart whose counts are 90,000 requests in 5 s: not one
		// interval's; they only set the baseline.
		{"implausible restart", 90_000, true, 760, DiscontinuityImplausible, 7},
		{"40 more after it", 90_040, false, 800, "", 0},
	}
	for i, st := range steps {
		s := snap("t", scaled(one, st.k))
		s.Time = t0.Add(time.Duration(i) * 5 * time.Second)
		s.Restarted = st.restarted
		update(t, tr, s)
		o := objective(t, tr, "m", "chat", KindTTFT)
		checkCounts(t, st.name, o.Total, Counts{Judged: st.judged, Good: st.judged})
		kinds := map[string]map[string]bool{}
		for _, d := range tr.Discontinuities() {
			if kinds[d.Kind] == nil {
				kinds[d.Kind] = map[string]bool{}
			}
			kinds[d.Kind][d.Series] = true
		}
		switch {
		case st.kind == "" && len(kinds) > 0:
			t.Errorf("%s: unexpected discontinuities %+v", st.name, tr.Discontinuities())
		case st.kind != "":
			// Of the five histograms, the generation tokens and the
			// finished requests, each on its own.
			if n := len(kinds[st.kind]); n != st.series || len(kinds) != 1 {
				t.Errorf("%s: %d series with %s, want %d: %+v", st.name, n, st.kind, st.series, tr.Discontinuities())
			}
		}
	}
}

// An engine that has shown rates above the ceiling may go on rising, up
// to peakHeadroom (4) times its recent peak rate: 100 requests a second
// is the ceiling; 500 in 5 s (100/s) is accepted and sets the peak, then
// 1,500 (300/s, under 4 × 100), then 5,000 (1,000/s, under 4 × 300);
// 30,000 (6,000/s) is more than 4 × 1,000.
func TestTrackerPeakRateRaisesTheBound(t *testing.T) {
	one := vllmLike("m").render(same(req{ttft: 0.1, tokens: 5}, 1))
	t0 := time.Unix(1_700_000_000, 0)
	tr := NewTracker("t", []SLO{ttftSLO("chat", 0.5)})
	tr.SetLimits(Limits{RequestsPerSecond: 100, TokensPerSecond: 1e9, Interval: 5 * time.Second})
	steps := []struct{ k, judged float64 }{
		{1000, 0}, {1500, 500}, {3000, 2000}, {8000, 7000}, {38_000, 7000},
	}
	for i, st := range steps {
		s := snap("t", scaled(one, st.k))
		s.Time = t0.Add(time.Duration(i) * 5 * time.Second)
		update(t, tr, s)
		checkCounts(t, "step", objective(t, tr, "m", "chat", KindTTFT).Total, Counts{Judged: st.judged, Good: st.judged})
	}
}

// Under Snapshot.NoReset (an unchanged process start time) a series that
// falls to less than half is a glitch, not a reset whose value would be
// added: a 2-rank engine missing a rank (1,000 -> 480) adds nothing, and
// when the rank is back (1,040) the interval from the kept baseline does.
func TestTrackerNoResetMakesFallsGlitches(t *testing.T) {
	one := vllmLike("m").render(same(req{ttft: 0.1, tokens: 5}, 1))
	tr := NewTracker("t", []SLO{ttftSLO("chat", 0.5)})
	for _, st := range []struct {
		name    string
		k       float64
		noReset bool
		judged  float64
		kind    string
	}{
		{"baseline", 1000, true, 0, ""},
		{"a rank missing", 480, true, 0, DiscontinuityGlitch},
		{"back", 1040, true, 40, ""},
		// Without the witness the same fall is a reset of each series.
		{"a fall without the witness", 500, false, 540, DiscontinuityReset},
	} {
		s := snap("t", scaled(one, st.k))
		s.NoReset = st.noReset
		update(t, tr, s)
		checkCounts(t, st.name, objective(t, tr, "m", "chat", KindTTFT).Total, Counts{Judged: st.judged, Good: st.judged})
		for _, d := range tr.Discontinuities() {
			if d.Kind != st.kind {
				t.Errorf("%s: %+v, want %q", st.name, d, st.kind)
			}
		}
		if st.kind != "" && len(tr.Discontinuities()) == 0 {
			t.Errorf("%s: no %s", st.name, st.kind)
		}
	}
}

// The interval floor (Limits.Interval): an increase is judged over at
// least the scrape interval. A scrape retried 50 ms after the previous
// one reads 40 more requests: over 50 ms that is 800 a second, over the
// ceiling of 100; over the 5 s floor it is 8 a second, and counted. With
// no floor (Interval 0) the same 40 are rejected as implausible.
func TestTrackerIntervalFloor(t *testing.T) {
	one := vllmLike("m").render(same(req{ttft: 0.1, tokens: 5}, 1))
	t0 := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		floor  time.Duration
		judged float64
		kinds  int
	}{{5 * time.Second, 40, 0}, {0, 0, 1}} {
		tr := NewTracker("t", []SLO{ttftSLO("chat", 0.5)})
		tr.SetLimits(Limits{RequestsPerSecond: 100, TokensPerSecond: 1e9, Interval: c.floor})
		for i, st := range []struct {
			k  float64
			at time.Duration
		}{{1000, 0}, {1040, 50 * time.Millisecond}} {
			s := snap("t", scaled(one, st.k))
			s.Time = t0.Add(st.at)
			update(t, tr, s)
			if i == 0 {
				continue
			}
			checkCounts(t, "50 ms later", objective(t, tr, "m", "chat", KindTTFT).Total, Counts{Judged: c.judged, Good: c.judged})
			kinds := map[string]bool{}
			for _, d := range tr.Discontinuities() {
				kinds[d.Kind] = true
			}
			if len(kinds) != c.kinds || c.kinds > 0 && !kinds[DiscontinuityImplausible] {
				t.Errorf("floor %v: discontinuities %+v, want %d kind(s)", c.floor, tr.Discontinuities(), c.kinds)
			}
		}
	}
}
