package goodput

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// outputOf returns the output totals of a histogram of lengths.
func outputOf(lens ...float64) OutputTotals {
	h := histOf(tokenBounds(), lens...)
	return OutputTotals{Bounds: h.Bounds, Cum: h.Cumulative, Count: h.Count, Sum: h.Sum}
}

// Two readings of one joint (ttft, error). Before the window: five
// requests of 3 tokens, all good. In it: the ten requests of tenRequests
// (932 tokens), one failing ttft and two failing error, so Δfailed = 3,
// ttft possibly met by 9, error by 8. WindowBounds: lower = 10 − 3 = 7,
// upper = min(10, 9, 8) = 8.
//
// Tokens, with L = 7 and U = 8 over the window's histogram (the ten):
// Low(7) = 3·6 + 4·21 = 102, 932 − High(3) = 932 − (500 + 2·200) = 32:
// lower 102. High(8) = 500 + 2·200 + 4·50 + 10 = 1110, 932 − Low(2) =
// 932 − 12 = 920: upper 920.
//
// With one request in flight at the edges, L = 6 and U = 9: Low(6) =
// 18 + 3·21 = 81, 932 − High(4) = 932 − 950 < 0: lower 81. High(9) =
// 1120, 932 − Low(1) = 926: upper 926.
func TestWindowTokenBoundsByHand(t *testing.T) {
	a := WindowTotals{Requests: 5, Good: []float64{5, 5}, Judged: []float64{5, 5}, Output: outputOf(3, 3, 3, 3, 3)}
	ten := tenRequests()
	b := WindowTotals{Requests: 15, Failed: 3, Good: []float64{14, 13}, Judged: []float64{15, 15}, Output: outputOf(3, 3, 3, 3, 3)}
	for i := range b.Output.Cum {
		b.Output.Cum[i] += ten.Cumulative[i]
	}
	b.Output.Count += ten.Count
	b.Output.Sum += ten.Sum
	if r := WindowBounds(a, b); r != (Bounds{7, 8}) {
		t.Fatalf("request bounds %+v, want {7 8}", r)
	}
	for _, c := range []struct {
		edge         float64
		lower, upper float64
	}{{0, 102, 920}, {1, 81, 926}} {
		got, ok := WindowTokenBounds(a, b, c.edge)
		if !ok {
			t.Fatalf("edge %v: no bounds", c.edge)
		}
		checkNear(t, "lower", got.Lower, c.lower)
		checkNear(t, "upper", got.Upper, c.upper)
	}
	// The histogram counted one request fewer than the joint judged (a
	// scrape between the two updates): its tokens are unknown, so no
	// bounds.
	short := b.Clone()
	short.Output.Count--
	short.Output.Sum -= 400
	for i, bound := range short.Output.Bounds {
		if bound >= 500 {
			short.Output.Cum[i]--
		}
	}
	if got, ok := WindowTokenBounds(a, short, 0); ok {
		t.Errorf("a request missing from the histogram: %+v, want no bounds", got)
	}
	// One more than judged (a second 400-token request): it may be
	// good, so U = 8 + 1 = 9 over eleven requests of 1,332 tokens. Lower:
	// Low(7) = 102, 1332 − High(4) = 1332 − (2·500 + 2·200) < 0: 102.
	long := b.Clone()
	long.Output.Count++
	long.Output.Sum += 400
	for i, bound := range long.Output.Bounds {
		if bound >= 500 {
			long.Output.Cum[i]++
		}
	}
	got, ok := WindowTokenBounds(a, long, 0)
	// High(9) over eleven = 2·500 + 2·200 + 4·50 + 10 = 1610; 1332 −
	// Low(2) = 1320: upper 1320.
	if !ok || !near(got.Lower, 102) || !near(got.Upper, 1320) {
		t.Errorf("a request more in the histogram: %+v %v, want {102 1320}", got, ok)
	}
}

// The incident the window bounds are for, through the tracker. Two
// requests start and finish between the first and last scrape (nothing in
// flight at either end). Y (10 tokens) starts fast and finishes in the
// first interval; X (100 tokens) gets its first token late (2 s, failing
// ttft ≤ 0.5 s) in the first interval and finishes, without error, in the
// second. The truth: Y alone is good, 10 tokens.
//
// Interval by interval: the first judged ttft on X and Y (½) and error on
// Y (1): ½ of one request, so Y's 10 tokens are bounded to [5, 5]
// (Low(½) = 3, 10 − High(½) = 5; High(½) = 5, 10 − Low(½) = 7). The
// second judged only error (X passes): X's 100 tokens count in full. The
// sum, [105, 105], does not hold the truth.
//
// Over the window: 2 finished, failed 1 (ttft), ttft met by 1, error by
// 2: request bounds [1, 1]. The histogram {10, 100}, sum 110: lower =
// max(Low(1) = 6, 110 − High(1) = 10) = 10; upper = min(High(1) = 100,
// 110 − Low(1) = 104) = 100. The truth, 10, is inside.
func TestWindowTokenBoundsHoldWhereIntervalSumsFail(t *testing.T) {
	slos := []SLO{{Name: "chat", Objectives: []Objective{{Kind: KindTTFT, Threshold: 0.5, Target: 0.99}, {Kind: KindError, Target: 0.99}}}}
	model := ttftLengthModel
	tr := NewTracker("t", slos)
	t0 := time.Unix(1_700_000_000, 0)
	var reads []WindowTotals
	for i, m := range []snapshot.Model{model(nil, 0), model([]float64{0.1, 2}, 1, 10), model([]float64{0.1, 2}, 2, 10, 100)} {
		update(t, tr, &snapshot.Snapshot{Target: "t", Engine: snapshot.VLLM, Time: t0.Add(time.Duration(i) * 5 * time.Second), Models: []snapshot.Model{m}})
		reads = append(reads, sloState(t, tr, "m", "chat").Joint.Window.Clone())
	}
	j := sloState(t, tr, "m", "chat").Joint
	if !near(j.Total.Tokens.Lower, 105) || !near(j.Total.Tokens.Upper, 105) {
		t.Errorf("interval sums %+v, want [105, 105]: the case no longer shows what it is for", j.Total.Tokens)
	}
	got, ok := WindowTokenBounds(reads[0], reads[2], 0)
	if !ok || !near(got.Lower, 10) || !near(got.Upper, 100) {
		t.Errorf("window token bounds %+v %v, want [10, 100]", got, ok)
	}
	// Each interval alone: the first holds Y, over {10} with request
	// bounds [0, 1] (ttft judged X too, which had not finished): [0, 10];
	// the second X, with request bounds [0, 0] (ttft met by none in it):
	// [0, 0]. Both true, up to the edge (X in flight between them).
	if got, ok := WindowTokenBounds(reads[0], reads[1], 0); !ok || got != (Bounds{0, 10}) {
		t.Errorf("first interval %+v %v, want [0, 10]", got, ok)
	}
	if got, ok := WindowTokenBounds(reads[1], reads[2], 0); !ok || got != (Bounds{0, 0}) {
		t.Errorf("second interval %+v %v, want [0, 0]", got, ok)
	}
}

// Hostile output-length histograms: absent for a scrape, a new bucket
// layout, a sum that is not a number, an engine restart. The cumulative
// counts never fall, the requests whose lengths are unknown are counted
// as unmeasured, and a window holding any of them has no token bounds,
// while the windows around it keep theirs. Every request is good (e2e
// 0.8 s), 10 tokens, 2 per scrape.
func TestOutputTotalsHostileInput(t *testing.T) {
	slos := []SLO{{Name: "fast", Objectives: []Objective{{Kind: KindE2E, Threshold: 1, Target: 0.9}}}}
	type step struct {
		n       int  // requests finished so far (this process)
		hist    bool // the output-length histogram is in the scrape
		bounds  []float64
		sum     float64 // NaN: a sum that is not a number; 0: 10 per request
		restart bool
		// unmeasured after the step
		unmeasured float64
	}
	other := []float64{16, 64, 256, 1024}
	steps := []step{
		{n: 0, hist: true},
		{n: 2, hist: true},
		{n: 4, hist: false, unmeasured: 2},                 // absent: these two are unknown
		{n: 6, hist: true, unmeasured: 2},                  // back: measures from the last that had it (4 requests, 40 tokens)
		{n: 8, hist: true, sum: math.NaN(), unmeasured: 4}, // a sum that is not a number
		{n: 10, hist: true, unmeasured: 6},                 // the increase from a NaN sum is no number either
		{n: 2, hist: true, restart: true, unmeasured: 6},   // a new process: its 2 are the increase
		{n: 4, hist: true, bounds: other, unmeasured: 8},   // another layout: left out
		{n: 6, hist: true, bounds: other, unmeasured: 10},  // and stays out, never counted in the wrong buckets
	}
	tr := NewTracker("t", slos)
	t0 := time.Unix(1_700_000_000, 0)
	var reads []WindowTotals
	var prev OutputTotals
	for i, s := range steps {
		m := snapshot.Model{Name: "m"}
		m.Hists[snapshot.E2E] = histOf(requestBounds(), repeat(0.8, s.n)...)
		if s.hist {
			b := tokenBounds()
			if s.bounds != nil {
				b = s.bounds
			}
			m.Hists[snapshot.OutputTokens] = histOf(b, repeat(10, s.n)...)
			if math.IsNaN(s.sum) {
				m.Hists[snapshot.OutputTokens].Sum = s.sum
			}
		}
		snap := &snapshot.Snapshot{Target: "t", Engine: snapshot.VLLM, Time: t0.Add(time.Duration(i) * 5 * time.Second), Models: []snapshot.Model{m}, Restarted: s.restart}
		update(t, tr, snap)
		w := sloState(t, tr, "m", "fast").Joint.Window
		o := w.Output
		if o.Count < prev.Count || o.Sum < prev.Sum || o.Unmeasured < prev.Unmeasured || len(o.Cum) < len(prev.Cum) {
			t.Fatalf("step %d: output totals went down: %+v after %+v", i, o, prev)
		}
		for k := range prev.Cum {
			if o.Cum[k] < prev.Cum[k] {
				t.Fatalf("step %d: bucket %v went down: %v after %v", i, o.Bounds[k], o.Cum[k], prev.Cum[k])
			}
		}
		if !(o.Sum >= 0) || math.IsInf(o.Sum, 0) {
			t.Fatalf("step %d: sum %v", i, o.Sum)
		}
		checkNear(t, "unmeasured", o.Unmeasured, s.unmeasured)
		if i == 0 && (len(o.Bounds) != len(tokenBounds()) || len(o.Cum) != len(o.Bounds) || o.Count != 0) {
			t.Errorf("baseline: the layout is known from the first snapshot, with nothing counted; got %+v", o)
		}
		prev = o.Clone()
		reads = append(reads, w.Clone())
	}
	// Windows: every request measured is good and 10 tokens, so where
	// there are bounds they are 10 per measured request exactly.
	// Back after the absent scrape, the histogram counts the four
	// requests since the last scrape that had it, the joint the two of
	// the window: those two may be any of the four, so [Low…] over four
	// of 10 tokens with L = 2, U = 4: [20, 40], around the truth 20.
	if got, ok := WindowTokenBounds(reads[2], reads[3], 0); !ok || !near(got.Lower, 20) || !near(got.Upper, 40) {
		t.Errorf("window 2..3: %+v %v, want [20, 40]", got, ok)
	}
	// Back after the absent scrape, the histogram counts the four
	// requests since the last scrape that had it, the joint the two of
	// the window: those two may be any of the four, so over four of 10
	// tokens with L = 2, U = 4: [20, 40], around the truth 20.
	if got, ok := WindowTokenBounds(reads[2], reads[3], 0); !ok || !near(got.Lower, 20) || !near(got.Upper, 40) {
		t.Errorf("window 2..3: %+v %v, want [20, 40]", got, ok)
	}
	for _, c := range []struct {
		a, b int
		ok   bool
		want float64
	}{
		{0, 1, true, 20}, // two requests, measured
		{1, 2, false, 0}, // the histogram absent
		{1, 3, false, 0}, // holds the absent scrape
		{5, 6, true, 20}, // the restarted process's two
		{3, 4, false, 0}, // the NaN sum
		{6, 7, false, 0}, // another layout
	} {
		got, ok := WindowTokenBounds(reads[c.a], reads[c.b], 0)
		if ok != c.ok || (ok && (!near(got.Lower, c.want) || !near(got.Upper, c.want))) {
			t.Errorf("window %d..%d: %+v %v, want %v %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
	if _, ok := WindowTokenBounds(reads[0], reads[1], math.NaN()); ok {
		t.Error("a NaN edge gave bounds")
	}
}

// The steps for vLLM's 1-2-5 family up to 1000, by hand. Buckets'
// token ranges: [0,1], [2,2], [3,5], [6,10], [11,20], [21,50], [51,100],
// [101,200], [201,500], [501,1000], [1001,∞).
func TestOutputStepsByHand(t *testing.T) {
	lower, upper, top := OutputTotals{Bounds: tokenBounds()}.Steps()
	wantLower := []float64{2, 1, 3, 5, 10, 30, 50, 100, 300, 500}
	wantUpper := []float64{1, 3, 5, 10, 30, 50, 100, 300, 500, 0}
	for j := range wantLower {
		if lower[j] != wantLower[j] || upper[j] != wantUpper[j] {
			t.Errorf("le %v: steps %v, %v; want %v, %v", tokenBounds()[j], lower[j], upper[j], wantLower[j], wantUpper[j])
		}
	}
	if top != 1000 {
		t.Errorf("top %v, want 1000", top)
	}
}

// stepBounds computes the token bounds as the recording rules do, from
// the steps: a second path to TokenBounds.
func stepBounds(bounds, cum []float64, n, sum float64, share Bounds) Bounds {
	lower, upper, top := OutputTotals{Bounds: bounds}.Steps()
	low := func(k float64) float64 {
		t := 0.0
		for j := range bounds {
			t += lower[j] * max(0, k-cum[j])
		}
		return t
	}
	inf := n > cum[len(cum)-1]
	high := func(m float64) float64 {
		if inf && m > 0 {
			return math.Inf(1)
		}
		t := top * m
		for j := range bounds {
			t -= upper[j] * max(0, cum[j]-(n-m))
		}
		return t
	}
	l, u := clamp01(share.Lower)*n, max(clamp01(share.Upper)*n, clamp01(share.Lower)*n)
	up := min(max(min(high(u), sum-low(n-u)), 0), sum)
	lo := min(max(max(low(l), sum-high(n-l)), 0), up)
	return Bounds{lo, up}
}

// The steps' sums are TokenBounds: random lengths (some past the last
// bound, some in it), random shares, fractional ones included.
func TestOutputStepsAreTokenBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 2000 {
		bounds := tokenBounds()
		if trial%3 == 0 {
			bounds = []float64{0.5, 1.5, 7, 64, 300.5}
		}
		n := 1 + rng.IntN(30)
		lens := make([]float64, n)
		for i := range lens {
			lens[i] = float64(rng.IntN(1200))
			if trial%2 == 0 {
				lens[i] = float64(rng.IntN(300))
			}
		}
		h := histOf(bounds, lens...)
		lo := rng.Float64()
		share := Bounds{lo, lo + (1-lo)*rng.Float64()}
		want, ok := TokenBounds(h.Bounds, h.Cumulative, h.Count, h.Sum, share)
		if !ok {
			t.Fatalf("trial %d: no bounds", trial)
		}
		got := stepBounds(h.Bounds, h.Cumulative, h.Count, h.Sum, share)
		if !near(got.Lower, want.Lower) || !near(got.Upper, want.Upper) {
			t.Fatalf("trial %d (lengths %v, share %+v): steps give %+v, TokenBounds %+v", trial, lens, share, got, want)
		}
	}
}

// slo-report's good tokens are the window's token bounds. Over 300 s, the
// ten requests of tenRequests finish without error; TTFT judged them and
// two more still running at the end, 12 in all, 10 good (one finished
// request and one running one slow). Window totals: 10 finished, failed
// 12 − 10 = 2, ttft met by 10, error by 10: requests [8, 10]. Tokens:
// Low(8) = 18 + 84 + 51 = 153, 932 − High(2) = 932 − 700 = 232: lower 232;
// High(10) = 1,130 (at most the sum), 932 − Low(0) = 932: upper 932. The
// truth, the nine good finished requests' tokens, is 932 minus the slow
// one's: inside, whichever it is. The interval's shares (ttft 10/12) put
// the good requests at 8⅓ exactly and the upper bound at 932 − Low(1⅔)
// = 922, below the truth 924 if the slow request was the 8-token one.
func TestReportTokensFromWindowTotals(t *testing.T) {
	slos := []SLO{{Name: "chat", Objectives: []Objective{{Kind: KindTTFT, Threshold: 0.5, Target: 0.99}, {Kind: KindError, Target: 0.99}}}}
	model := ttftLengthModel
	t0 := time.Unix(1_700_000_000, 0)
	prev := &snapshot.Snapshot{Target: "t", Engine: snapshot.VLLM, Time: t0, Models: []snapshot.Model{model(nil, 0)}}
	ttft := append(repeat(0.1, 10), 2, 2)
	cur := &snapshot.Snapshot{Target: "t", Engine: snapshot.VLLM, Time: t0.Add(300 * time.Second),
		Models: []snapshot.Model{model(ttft, 10, 8, 9, 10, 30, 35, 40, 50, 150, 200, 400)}}
	r, err := BuildReport(prev, cur, slos, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 1 || !r.Rows[0].Joint.TokensBounded {
		t.Fatalf("rows %+v", r.Rows)
	}
	j := r.Rows[0].Joint
	checkNear(t, "good tok/s lower", j.Lower.TokensPerSecond, 232.0/300)
	checkNear(t, "good tok/s upper", j.Upper.TokensPerSecond, 932.0/300)
}
