package goodput

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// vLLM's request_tokens bucket family for max_model_len 1000 (1-2-5).
func tokenBounds() []float64 { return []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000} }

// ttftLengthModel is model "m" with finished requests ended by "stop", a
// TTFT histogram of ttft and an output-length histogram of lens.
func ttftLengthModel(ttft []float64, finished float64, lens ...float64) snapshot.Model {
	m := snapshot.Model{Name: "m", Finished: map[string]float64{"stop": finished}}
	m.Hists[snapshot.TTFT] = histOf(ttftBounds(), ttft...)
	m.Hists[snapshot.OutputTokens] = histOf(tokenBounds(), lens...)
	return m
}

// Ten requests: 8, 9, 10 tokens in (5,10]; 30, 35, 40, 50 in (20,50];
// 150, 200 in (100,200]; 400 in (200,500]. Sum 27 + 155 + 350 + 400 = 932.
func tenRequests() *snapshot.Histogram {
	return histOf(tokenBounds(), 8, 9, 10, 30, 35, 40, 50, 150, 200, 400)
}

func TestTokenBoundsByHand(t *testing.T) {
	h := tenRequests()
	if h.Sum != 932 || h.Count != 10 {
		t.Fatalf("fixture: %+v", h)
	}
	cases := []struct {
		name         string
		share        Bounds
		lower, upper float64
	}{
		// L = 7, U = 9.
		// Low(7) = 3·6 + 4·21 = 102 (lower edges of (5,10] and (20,50]);
		// sum − High(3) = 932 − (500 + 2·200) = 32; lower = 102.
		// High(9) = 500 + 2·200 + 4·50 + 2·10 = 1120;
		// sum − Low(1) = 932 − 6 = 926; upper = 926.
		{"70-90 %", Bounds{0.7, 0.9}, 102, 926},
		// L = U = 9. Low(9) = 18 + 84 + 2·101 = 304; sum − High(1) =
		// 932 − 500 = 432: the sum binds. Upper as above, 926.
		{"90 %", Bounds{0.9, 0.9}, 432, 926},
		// Everyone good: exactly the sum.
		{"all good", Bounds{1, 1}, 932, 932},
		// Nobody good: nothing.
		{"none good", Bounds{0, 0}, 0, 0},
		// L = 2.5 takes half of a third request: Low(2.5) = 2.5·6 = 15.
		// U = 2.5: High(2.5) = 500 + 1.5·200 = 800; sum − Low(7.5) =
		// 932 − (18 + 84 + 0.5·101) = 779.5; upper = 779.5.
		{"fractional", Bounds{0.25, 0.25}, 15, 779.5},
	}
	for _, c := range cases {
		got, ok := TokenBounds(h.Bounds, h.Cumulative, h.Count, h.Sum, c.share)
		if !ok {
			t.Errorf("%s: not ok", c.name)
			continue
		}
		checkNear(t, c.name+" lower", got.Lower, c.lower)
		checkNear(t, c.name+" upper", got.Upper, c.upper)
	}
}

// Requests past the last finite bound have no upper edge: only the sum
// limits them. Bounds 1, 2, 5; 3 tokens in (2,5], then 100, 200, 300.
// L = 2: Low(2) = 3 + 6 = 9 (the +Inf bucket starts at 6), and
// sum − High(2) is −∞. U = 3: High(3) = +∞; sum − Low(1) = 603 − 3 = 600.
func TestTokenBoundsInfBucket(t *testing.T) {
	h := histOf([]float64{1, 2, 5}, 3, 100, 200, 300)
	got, ok := TokenBounds(h.Bounds, h.Cumulative, h.Count, h.Sum, Bounds{0.5, 0.75})
	if !ok || got != (Bounds{9, 600}) {
		t.Errorf("got %+v %v, want {9 600}", got, ok)
	}
}

func TestTokenBoundsHostileInput(t *testing.T) {
	h := tenRequests()
	for _, sum := range []float64{math.NaN(), math.Inf(1), -1} {
		if _, ok := TokenBounds(h.Bounds, h.Cumulative, h.Count, sum, Bounds{0.5, 1}); ok {
			t.Errorf("sum %v accepted", sum)
		}
	}
	if _, ok := TokenBounds(h.Bounds, h.Cumulative[:3], h.Count, h.Sum, Bounds{0.5, 1}); ok {
		t.Error("buckets and bounds of different lengths accepted")
	}
	if _, ok := TokenBounds(h.Bounds, h.Cumulative, math.NaN(), h.Sum, Bounds{0.5, 1}); ok {
		t.Error("NaN count accepted")
	}
	// A sum below what the buckets allow (read a request apart): three
	// requests of at least 6 tokens but a sum of 5. Clamped, never
	// lower > upper or above the sum.
	odd := histOf(tokenBounds(), 6, 6, 6)
	got, ok := TokenBounds(odd.Bounds, odd.Cumulative, odd.Count, 5, Bounds{1, 1})
	if !ok || got != (Bounds{5, 5}) {
		t.Errorf("inconsistent sum: %+v %v, want {5 5}", got, ok)
	}
	// Shares outside [0,1] or NaN are clamped.
	got, ok = TokenBounds(h.Bounds, h.Cumulative, h.Count, h.Sum, Bounds{math.NaN(), 2})
	if !ok || got != (Bounds{0, 932}) {
		t.Errorf("wild shares: %+v", got)
	}
	if got, ok := TokenBounds(nil, nil, 0, 0, Bounds{0.5, 1}); !ok || got != (Bounds{}) {
		t.Errorf("no traffic: %+v %v", got, ok)
	}
}

// Any set of good requests of a size between L and U has its tokens
// inside the bounds, whatever the lengths: random lengths, random good
// sets (including the worst, the shortest or longest), random shares.
func TestTokenBoundsHoldForAnyGoodSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	bounds := tokenBounds()
	for trial := range 2000 {
		n := 1 + rng.IntN(40)
		lens := make([]float64, n)
		for i := range lens {
			lens[i] = float64(rng.IntN(1500)) // some past the last bound
		}
		h := histOf(bounds, lens...)
		lo := rng.Float64()
		share := Bounds{lo, lo + (1-lo)*rng.Float64()}
		b, ok := TokenBounds(h.Bounds, h.Cumulative, h.Count, h.Sum, share)
		if !ok {
			t.Fatal("not ok")
		}
		gMin := int(math.Ceil(share.Lower*float64(n) - 1e-9))
		gMax := int(math.Floor(share.Upper*float64(n) + 1e-9))
		sorted := slices.Clone(lens)
		slices.Sort(sorted)
		for g := gMin; g <= gMax; g++ {
			shortest, longest := sumOf(sorted[:g]), sumOf(sorted[n-g:])
			perm := rng.Perm(n)[:g]
			random := 0.0
			for _, i := range perm {
				random += lens[i]
			}
			for _, tok := range []float64{shortest, longest, random} {
				if tok < b.Lower-1e-6 || tok > b.Upper+1e-6 {
					t.Fatalf("trial %d: %d of %d good (share %+v) have %v tokens, outside %+v; lengths %v",
						trial, g, n, share, tok, b, lens)
				}
			}
		}
	}
}

func sumOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

// The defect the bounds fix: failing requests longer than passing ones.
// Six requests finish in the interval: four short ones (10 tokens, e2e
// 0.8 s) meet e2e ≤ 1 s, two long ones (300 tokens, 1.2 s) miss it. The
// good requests generated 40 of the 640 tokens. The old estimate, all
// tokens times 4/6, says at least 426.7: ten times the truth. From the
// histogram: L = U = 4; Low(4) = 4·6 = 24, 640 − High(2) = 640 − 1000 < 0,
// so lower = 24; High(4) = 2·500 + 2·10 = 1020, 640 − Low(2) = 628, so
// upper = 628. The truth, 40, is inside.
func TestTrackerTokenBoundsFromOutputHistogram(t *testing.T) {
	slos := []SLO{{Name: "fast", Objectives: []Objective{{Kind: KindE2E, Threshold: 1, Target: 0.9}}}}
	model := func(short, long int, withHist bool) snapshot.Model {
		var e2e, lens []float64
		e2e = append(append(e2e, repeat(0.8, short)...), repeat(1.2, long)...)
		lens = append(append(lens, repeat(10, short)...), repeat(300, long)...)
		m := snapshot.Model{Name: "m"}
		m.Hists[snapshot.E2E] = histOf(requestBounds(), e2e...)
		m.Counters[snapshot.GenerationTokens] = snapshot.Value{V: sumOf(lens), OK: true}
		if withHist {
			m.Hists[snapshot.OutputTokens] = histOf(tokenBounds(), lens...)
		}
		return m
	}
	for _, withHist := range []bool{true, false} {
		tr := NewTracker("t", slos)
		t0 := time.Unix(1_700_000_000, 0)
		for i, m := range []snapshot.Model{model(1, 0, withHist), model(5, 2, withHist)} {
			s := &snapshot.Snapshot{Target: "t", Engine: snapshot.VLLM, Time: t0.Add(time.Duration(i) * 5 * time.Second), Models: []snapshot.Model{m}}
			if err := tr.Update(s); err != nil {
				t.Fatal(err)
			}
		}
		j := tr.Model("m").SLOs[0].Joint
		if !j.TokensSupported || j.TokensBounded != withHist || j.Interval.TokensBounded != withHist {
			t.Fatalf("hist %v: supported %v bounded %v/%v", withHist, j.TokensSupported, j.TokensBounded, j.Interval.TokensBounded)
		}
		if withHist {
			checkNear(t, "lower", j.Total.Tokens.Lower, 24)
			checkNear(t, "upper", j.Total.Tokens.Upper, 628)
			checkNear(t, "interval tokens (of the finished requests)", j.Interval.Tokens, 640)
			if truth := 40.0; truth < j.Total.Tokens.Lower || truth > j.Total.Tokens.Upper {
				t.Errorf("truth %v outside %+v", truth, j.Total.Tokens)
			}
		} else {
			// The estimate, kept where the engine has no histogram.
			checkNear(t, "estimate", j.Total.Tokens.Lower, 640*4.0/6)
		}
	}
}

// A share of tokens (itl) says nothing about which requests failed: the
// token figures stay the estimate even with the histogram.
func TestPerTokenObjectiveKeepsTheEstimate(t *testing.T) {
	slos := []SLO{{Name: "itl", Objectives: []Objective{{Kind: KindITL, Threshold: 0.05, Target: 0.9}}}}
	m := func(tokens int) snapshot.Model {
		m := snapshot.Model{Name: "m"}
		m.Hists[snapshot.ITL] = histOf(interTokenBounds(), repeat(0.02, tokens)...)
		m.Hists[snapshot.OutputTokens] = histOf(tokenBounds(), float64(tokens))
		m.Counters[snapshot.GenerationTokens] = snapshot.Value{V: float64(tokens), OK: true}
		return m
	}
	tr := NewTracker("t", slos)
	for i, tokens := range []int{10, 110} {
		s := &snapshot.Snapshot{Target: "t", Engine: snapshot.VLLM, Time: time.Unix(int64(i*5), 0), Models: []snapshot.Model{m(tokens)}}
		if err := tr.Update(s); err != nil {
			t.Fatal(err)
		}
	}
	j := tr.Model("m").SLOs[0].Joint
	if j.TokensBounded || j.Interval.TokensBounded {
		t.Error("per-token objective: token bounds claimed")
	}
	checkNear(t, "estimate", j.Total.Tokens.Lower, 100)
}

// A flap of the output-length histogram (it reads 19 requests after 20,
// as two replicas behind one address would) adds no tokens, and its
// return adds the requests since the last good reading once. Every
// request is 10 tokens and good (e2e 0.8 s), so the bounds are exact:
// after the baseline of 10 requests, 20 more finish, 200 tokens, whatever
// the flap.
func TestOutputHistogramFlapAddsTokensOnce(t *testing.T) {
	slos := []SLO{{Name: "fast", Objectives: []Objective{{Kind: KindE2E, Threshold: 1, Target: 0.9}}}}
	tr := NewTracker("t", slos)
	for i, c := range []struct{ e2e, out int }{{10, 10}, {20, 20}, {25, 19}, {30, 30}} {
		m := snapshot.Model{Name: "m"}
		m.Hists[snapshot.E2E] = histOf(requestBounds(), repeat(0.8, c.e2e)...)
		m.Hists[snapshot.OutputTokens] = histOf(tokenBounds(), repeat(10, c.out)...)
		s := &snapshot.Snapshot{Target: "t", Engine: snapshot.VLLM, Time: time.Unix(int64(5*i), 0), Models: []snapshot.Model{m}}
		if err := tr.Update(s); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			if in := tr.Model("m").SLOs[0].Joint.Interval; in.Good.Tokens != (Bounds{}) {
				t.Errorf("the flap added %+v tokens", in.Good.Tokens)
			}
		}
	}
	got := tr.Model("m").SLOs[0].Joint.Total.Tokens
	checkNear(t, "lower", got.Lower, 200)
	checkNear(t, "upper", got.Upper, 200)
}
