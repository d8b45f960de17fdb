package capacity

import (
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// The observer holds one estimator per model and SLO the tracker holds,
// and lets go of a model the tracker forgot: two models under two SLOs
// are four estimators; once "b" has been gone longer than the tracker's
// ForgetAfter, two. Load is arrivals where running and waiting are
// published: 50 finished in 5 s while in flight rose from 4 to 14 is
// 60 arrivals, 12 req/s.
func TestObserverFollowsTracker(t *testing.T) {
	slos := []goodput.SLO{
		{Name: "s1", Objectives: []goodput.Objective{{Kind: goodput.KindE2E, Threshold: 1, Target: 0.9}}},
		{Name: "s2", Objectives: []goodput.Objective{{Kind: goodput.KindE2E, Threshold: 2, Target: 0.9}}},
	}
	tr := goodput.NewTracker("t", slos)
	tr.ForgetAfter(time.Minute)
	o := NewObserver(LiveOptions{Window: 5 * time.Second, MinWindows: 1})
	var prev *snapshot.Snapshot
	at := time.Unix(0, 0)
	n := 0.0
	snap := func(names ...string) {
		n++
		var models []snapshot.Model
		for _, name := range names {
			m := snapshot.Model{Name: name}
			m.Hists[snapshot.E2E] = &snapshot.Histogram{Bounds: []float64{1}, Cumulative: []float64{50 * n}, Count: 50 * n}
			m.Counters[snapshot.GenerationTokens] = snapshot.Value{V: 5000 * n, OK: true}
			m.Gauges[snapshot.Running] = snapshot.Value{V: 4 + 10*(n-1), OK: true}
			m.Gauges[snapshot.Waiting] = snapshot.Value{V: 0, OK: true}
			models = append(models, m)
		}
		cur := &snapshot.Snapshot{Target: "t", Engine: snapshot.VLLM, Time: at, Models: models}
		if err := tr.Update(cur); err != nil {
			t.Fatal(err)
		}
		o.Observe(tr, prev, cur)
		prev = cur
		at = at.Add(5 * time.Second)
	}
	snap("a", "b")
	snap("a", "b")
	if o.Len() != 4 {
		t.Fatalf("%d estimators, want 4", o.Len())
	}
	est := o.Estimates()
	if len(est) != 4 || est[0].Model != "a" || est[0].SLO != "s1" || est[0].Load != 12 {
		t.Fatalf("estimates %+v; want four, a/s1 first, load 12 req/s", est)
	}
	for range 20 { // 100 s without "b"
		snap("a")
	}
	if o.Len() != 2 {
		t.Fatalf("%d estimators after b was forgotten, want 2", o.Len())
	}
}

// A window's goodput is its lower token bound drawn from the window's
// totals, not the intervals' bounds added up. Two requests in one 10 s
// window of two scrape intervals (goodput's
// TestWindowTokenBoundsHoldWhereIntervalSumsFail): Y, 10 tokens, fast and
// finished in the first; X, 100 tokens, a first token too late for
// ttft ≤ 0.5 s in the first and finished in the second. The truth is 10
// good tokens, 1 tok/s. Added up, the intervals' lower bounds are 5 and
// 100, 10.5 tok/s, ten times the truth; the window's bound is [10, 100],
// so its lower bound, 1 tok/s, is the truth.
func TestObserverWindowGoodputFromTotals(t *testing.T) {
	slos := []goodput.SLO{{Name: "chat", Objectives: []goodput.Objective{
		{Kind: goodput.KindTTFT, Threshold: 0.5, Target: 0.99}, {Kind: goodput.KindError, Target: 0.99}}}}
	ttftBounds := []float64{0.1, 0.5, 1, 2.5}
	lenBounds := []float64{1, 2, 5, 10, 20, 50, 100, 200}
	hist := testbody.HistOf
	model := func(ttft []float64, finished float64, lens ...float64) snapshot.Model {
		m := snapshot.Model{Name: "m", Finished: map[string]float64{"stop": finished}}
		m.Hists[snapshot.TTFT] = hist(ttftBounds, ttft...)
		m.Hists[snapshot.OutputTokens] = hist(lenBounds, lens...)
		return m
	}
	tr := goodput.NewTracker("t", slos)
	o := NewObserver(LiveOptions{Window: 10 * time.Second, MinWindows: 1})
	var prev *snapshot.Snapshot
	for i, m := range []snapshot.Model{model(nil, 0), model([]float64{0.1, 2}, 1, 10), model([]float64{0.1, 2}, 2, 10, 100)} {
		cur := &snapshot.Snapshot{Target: "t", Engine: snapshot.VLLM, Time: time.Unix(int64(5*i), 0), Models: []snapshot.Model{m}}
		if err := tr.Update(cur); err != nil {
			t.Fatal(err)
		}
		o.Observe(tr, prev, cur)
		prev = cur
	}
	e := o.est[Key{"m", "chat"}]
	if e == nil || len(e.levels) != 1 {
		t.Fatalf("estimator %+v: want one level", e)
	}
	if lv := e.levels[0]; lv.good != 1 || lv.load != 0.2 || lv.thr != 11 {
		t.Errorf("level: load %v req/s, throughput %v tok/s, goodput %v tok/s; want 0.2, 11, 1", lv.load, lv.thr, lv.good)
	}
}
