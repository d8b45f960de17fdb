package goodput

import (
	"math/rand/v2"
	"testing"
)

func TestJointBounds(t *testing.T) {
	cases := []struct {
		p    []float64
		want Bounds
	}{
		{nil, Bounds{1, 1}},
		{[]float64{0.9}, Bounds{0.9, 0.9}},
		{[]float64{0.8, 0.9}, Bounds{0.7, 0.8}},
		{[]float64{0.99, 0.95, 0.999}, Bounds{0.939, 0.95}},
		{[]float64{0.5, 0.4}, Bounds{0, 0.4}}, // Σp − 1 < 0: no guarantee at all
		{[]float64{1, 1, 0.3}, Bounds{0.3, 0.3}},
		{[]float64{0, 1}, Bounds{0, 0}},
	}
	for _, c := range cases {
		got := JointBounds(c.p...)
		if !near(got.Lower, c.want.Lower) || !near(got.Upper, c.want.Upper) {
			t.Errorf("JointBounds(%v) = %+v, want %+v", c.p, got, c.want)
		}
	}
}

// jointCase is per-request ground truth whose joint outcome is known.
type jointCase struct {
	name         string
	reqs         []req
	lower, upper float64 // hand-computed; negative = not checked
}

// TestJointAgainstExact histograms per-request data and checks that the
// tracker's bounds hold the exact share of requests meeting every
// objective. Thresholds sit on bucket bounds, so the marginals are exact
// and any miss is the bounds' fault.
func TestJointAgainstExact(t *testing.T) {
	const ttftT, tpotT, e2eT = 0.5, 0.05, 5.0 // bounds of their vLLM families
	ok := req{ttft: 0.1, tpot: 0.02, e2e: 2, tokens: 10}
	slowStart := req{ttft: 0.9, tpot: 0.02, e2e: 2, tokens: 10}
	slowTokens := req{ttft: 0.1, tpot: 0.09, e2e: 2, tokens: 10}
	slowBoth := req{ttft: 0.9, tpot: 0.09, e2e: 8, tokens: 10}
	cases := []jointCase{
		// Failures on disjoint requests: the exact share (6/10) is the lower bound.
		{"disjoint", concat(same(ok, 6), same(slowStart, 2), same(slowTokens, 2)), 0.6, 0.8},
		// Failures nested in one another: the exact share (7/10) is the upper bound.
		{"nested", concat(same(ok, 7), same(slowBoth, 1), same(slowStart, 2)), 0.5, 0.7},
		{"all good", same(ok, 5), 1, 1},
		{"all bad", same(slowBoth, 5), 0, 0},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 50 {
		// A shared load factor makes the objectives fail together (as
		// under overload), a private one makes them independent.
		shared := i%2 == 0
		var reqs []req
		for range 200 {
			load := rng.ExpFloat64()
			f := func() float64 {
				if shared {
					return load * (0.8 + 0.4*rng.Float64())
				}
				return rng.ExpFloat64()
			}
			reqs = append(reqs, req{ttft: 0.3 * f(), tpot: 0.03 * f(), e2e: 3 * f(), tokens: 1 + rng.IntN(50)})
		}
		cases = append(cases, jointCase{name: "random", reqs: reqs, lower: -1, upper: -1})
	}
	slos := []SLO{{Name: "chat", Objectives: []Objective{
		{Kind: KindTTFT, Threshold: ttftT, Target: 0.9},
		{Kind: KindTPOT, Threshold: tpotT, Target: 0.9},
		{Kind: KindE2E, Threshold: e2eT, Target: 0.9},
	}}}
	for _, c := range cases {
		exact, tokens := 0.0, 0.0
		for _, r := range c.reqs {
			tokens += float64(r.tokens)
			if r.ttft <= ttftT && r.tpot <= tpotT && r.e2e <= e2eT {
				exact++
			}
		}
		exact /= float64(len(c.reqs))
		e := vllmLike("m")
		tr := NewTracker("t", slos)
		update(t, tr, snap("t", e.render(nil)))
		update(t, tr, snap("t", e.render(c.reqs)))
		in := tr.Model("m").SLOs[0].Joint.Interval
		b := in.Attainment
		if !(b.Lower <= exact+1e-12 && exact <= b.Upper+1e-12) {
			t.Errorf("%s: exact %v outside [%v, %v]", c.name, exact, b.Lower, b.Upper)
		}
		if c.lower >= 0 && (!near(b.Lower, c.lower) || !near(b.Upper, c.upper)) {
			t.Errorf("%s: bounds [%v, %v], want [%v, %v]", c.name, b.Lower, b.Upper, c.lower, c.upper)
		}
		if want := float64(len(c.reqs)); !near(in.Requests, want) {
			t.Errorf("%s: requests %v, want %v", c.name, in.Requests, want)
		}
		checkNear(t, c.name+" good requests lower", in.Good.Requests.Lower, b.Lower*float64(len(c.reqs)))
		checkNear(t, c.name+" good tokens upper", in.Good.Tokens.Upper, b.Upper*tokens)
	}
}
