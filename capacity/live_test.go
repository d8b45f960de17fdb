package capacity

import (
	"math"
	"testing"
	"time"
)

// feed adds windows of 60 s at rate req/s with throughput and goodput in
// tok/s, as four 15 s intervals each.
func feed(l *Live, at *time.Time, windows int, rate, thr, good float64) {
	for range windows * 4 {
		*at = at.Add(15 * time.Second)
		l.Add(*at, 15, rate*15, thr*15, good*15)
	}
}

// TestLiveWorkedExample replays the worked example's rounds as live
// traffic, three windows each. Up to round 6 goodput only rises: the
// estimate is round 6's 17 req/s and 3,330 tok/s as a lower bound. Round
// 7's 2,520 tok/s is 24 % below 3,330 (more than the 5 % Drop): from then
// on it is a knee. Headroom at 20 req/s is 1 − 20/17 = −0.176; when the
// load falls back to 8 req/s it is 1 − 8/17 = 0.529.
func TestLiveWorkedExample(t *testing.T) {
	l := NewLive(LiveOptions{})
	at := time.Unix(0, 0)
	if _, ok := l.Estimate(); ok {
		t.Fatal("estimate before any window")
	}
	for _, r := range example[:6] {
		feed(l, &at, 3, r.rate, r.thr, r.good)
	}
	e, ok := l.Estimate()
	if !ok || e.Reached || e.KneeLoad != 17 || e.KneeGoodput != 3330 || e.Levels != 6 {
		t.Fatalf("before the knee: %+v %v; want a lower bound at 17 req/s, 3330 tok/s, 6 levels", e, ok)
	}
	if math.Abs(e.Headroom) > 1e-12 {
		t.Fatalf("headroom at the knee's own load = %v, want 0", e.Headroom)
	}
	feed(l, &at, 3, example[6].rate, example[6].thr, example[6].good)
	e, _ = l.Estimate()
	if !e.Reached || e.KneeLoad != 17 || math.Abs(e.Headroom-(1-20.0/17)) > 1e-12 {
		t.Fatalf("past the knee: %+v", e)
	}
	feed(l, &at, 1, 8, 1900, 1900)
	e, _ = l.Estimate()
	if !e.Reached || math.Abs(e.Headroom-(1-8.0/17)) > 1e-12 {
		t.Fatalf("back at 8 req/s: %+v", e)
	}
	// one window at a level is not enough evidence for it
	l2 := NewLive(LiveOptions{})
	feed(l2, &at, 1, 17, 3400, 3330)
	if _, ok := l2.Estimate(); ok {
		t.Fatal("a single window made an estimate")
	}
}

// example mirrors the worked example's rounds (rate, throughput, goodput).
var example = []struct{ rate, thr, good float64 }{
	{2, 480, 480}, {5, 1200, 1200}, {8, 1900, 1900}, {11, 2500, 2500}, {14, 3100, 3060},
	{17, 3400, 3330}, {20, 3700, 2520}, {23, 3850, 1700}, {26, 3950, 900}, {30, 4000, 380},
}

// TestLiveBounded: a thousand distinct loads keep at most MaxLevels
// levels; hostile intervals change nothing.
func TestLiveBounded(t *testing.T) {
	l := NewLive(LiveOptions{MaxLevels: 16})
	at := time.Unix(0, 0)
	for i := range 1000 {
		feed(l, &at, 1, 0.1*math.Pow(1.06, float64(i%200)), 100, 100)
	}
	if n := l.LevelCount(); n != 16 {
		t.Fatalf("%d levels, want the bound 16", n)
	}
	before := *l
	for _, v := range []float64{math.NaN(), math.Inf(1), -1} {
		l.Add(at, 15, v, 1, 1)
		l.Add(at, v, 1, 1, 1)
	}
	l.Add(at, 0, 1, 1, 1)
	if l.secs != before.secs || l.reqs != before.reqs {
		t.Fatal("a hostile interval was added")
	}
	// idle windows leave no level but set the current load
	l3 := NewLive(LiveOptions{})
	feed(l3, &at, 3, 0.01, 0, 0)
	if l3.LevelCount() != 0 {
		t.Fatal("idle windows made a level")
	}
}

// TestLiveNoiseIsNotAKnee: a higher level whose goodput is 8 % below the
// best (3,000 against 3,260 tok/s) while all its tokens are still good
// (goodput = throughput) is noise in the workload, not load past the
// knee; one where only 70 % of them are good (2,450 of 3,500) is.
func TestLiveNoiseIsNotAKnee(t *testing.T) {
	l := NewLive(LiveOptions{})
	at := time.Unix(0, 0)
	feed(l, &at, 2, 14, 3260, 3260)
	feed(l, &at, 2, 16, 3000, 3000)
	if e, _ := l.Estimate(); e.Reached || e.KneeLoad != 14 {
		t.Fatalf("noise read as a knee: %+v", e)
	}
	feed(l, &at, 2, 18, 3500, 2450)
	if e, _ := l.Estimate(); !e.Reached || e.KneeLoad != 14 {
		t.Fatalf("past the knee not seen: %+v", e)
	}
}

// A jump in load with nothing observed between: 1 req/s met the SLO,
// then 10 req/s failed. The knee lies somewhere between, unobserved: the
// estimate stays a lower bound at 1 req/s (exported as
// estimate="lower_bound", which LLMCapacityHeadroomLow ignores). Loads
// then observed just above the passing one make it a knee.
func TestLiveGapIsLowerBound(t *testing.T) {
	l := NewLive(LiveOptions{})
	at := time.Unix(0, 0)
	feed(l, &at, 3, 1, 250, 250)
	feed(l, &at, 3, 10, 1500, 100)
	e, ok := l.Estimate()
	if !ok || e.Reached || e.KneeLoad != 1 {
		t.Fatalf("after a jump from 1 to 10 req/s: %+v %v; want a lower bound at 1 req/s", e, ok)
	}
	// Back to 1 req/s: a headroom of 0 on a lower bound, not a knee.
	feed(l, &at, 1, 1, 250, 250)
	if e, _ := l.Estimate(); e.Reached {
		t.Fatalf("back at 1 req/s: %+v", e)
	}
	// 1.4 req/s observed and failing, 40 % above the last passing load
	// (within MaxGap, 2x): now the knee is reached.
	feed(l, &at, 3, 1.4, 350, 200)
	if e, _ := l.Estimate(); !e.Reached || e.KneeLoad != 1 {
		t.Fatalf("with 1.4 req/s failing: %+v", e)
	}
	// Within the gap, passing loads move the last passing one up: 1, 2,
	// 3 req/s pass, 10 fails: a gap of 3.3x, a lower bound at 3.
	l = NewLive(LiveOptions{})
	for _, r := range []float64{1, 2, 3} {
		feed(l, &at, 3, r, 250*r, 250*r)
	}
	feed(l, &at, 3, 10, 1500, 300)
	if e, _ := l.Estimate(); e.Reached || e.KneeLoad != 3 {
		t.Fatalf("1, 2, 3 pass, 10 fails: %+v", e)
	}
}

// The 5 % tie-break (Drop): a higher load level whose goodput is below
// the knee's by noise, or still tracks its own throughput, is passing,
// not past the knee. Knee: 10 req/s at 1,000 tok/s, all good. Worked by
// hand against 1 − 0.05 = 0.95:
//   - 12 req/s at 960 of 1,000 good: 4 % below the knee → passing; the
//     knee stays a lower bound (not reached);
//   - 12 req/s at 940 of 1,000: 6 % below the knee and below its own
//     throughput → past the knee (reached);
//   - 12 req/s at 900 of 920: 10 % below the knee, but 2.2 % below its
//     own throughput (goodput still tracks it) → passing.
func TestLiveTieBreak(t *testing.T) {
	for _, c := range []struct {
		name      string
		thr, good float64
		reached   bool
	}{
		{"4 % below the knee", 1000, 960, false},
		{"6 % below the knee and its throughput", 1000, 940, true},
		{"10 % below the knee, 2.2 % below its throughput", 920, 900, false},
	} {
		l := NewLive(LiveOptions{})
		at := time.Unix(0, 0)
		feed(l, &at, 3, 10, 1000, 1000)
		feed(l, &at, 3, 12, c.thr, c.good)
		e, ok := l.Estimate()
		if !ok || e.KneeLoad != 10 || e.KneeGoodput != 1000 || e.Reached != c.reached {
			t.Errorf("%s: %+v %v; want the knee at 10 req/s, 1000 tok/s, reached %v", c.name, e, ok, c.reached)
		}
	}
}

// Loads within the 5 % level width (LevelRatio 1.05) are one level:
// 10 and 10.4 req/s (floor(ln 10 / ln 1.05) = floor(ln 10.4 / ln 1.05)
// = 47); 11 req/s (49) is another.
func TestLiveLevelWidth(t *testing.T) {
	l := NewLive(LiveOptions{})
	at := time.Unix(0, 0)
	feed(l, &at, 2, 10, 1000, 1000)
	feed(l, &at, 2, 10.4, 1040, 1040)
	if n := l.LevelCount(); n != 1 {
		t.Errorf("10 and 10.4 req/s: %d levels, want 1", n)
	}
	feed(l, &at, 2, 11, 1100, 1100)
	if n := l.LevelCount(); n != 2 {
		t.Errorf("and 11 req/s: %d levels, want 2", n)
	}
}
