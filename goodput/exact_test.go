package goodput

import (
	"testing"
	"time"
)

func exactSLO(name string, objs ...Objective) SLO { return SLO{Name: name, Objectives: objs} }

// TPOT is decode/(n−1) when the span has the decode time, else
// (e2e − ttft)/(n−1); one token has none to miss.
func TestTracedTPOT(t *testing.T) {
	for _, c := range []struct {
		r    TracedRequest
		want float64
		ok   bool
	}{
		// 1.5/(31−1) = 0.05
		{TracedRequest{E2E: 3, TTFT: 0.5, HasTTFT: true, Decode: 1.5, HasDecode: true, CompletionTokens: 31}, 0.05, true},
		// (3 − 0.5)/(51 − 1) = 0.05
		{TracedRequest{E2E: 3, TTFT: 0.5, HasTTFT: true, CompletionTokens: 51}, 0.05, true},
		{TracedRequest{E2E: 3, CompletionTokens: 51}, 0, false},
		{TracedRequest{E2E: 3, CompletionTokens: 1}, 0, true},
		// An estimated count gives no TPOT to judge; one token has none.
		{TracedRequest{E2E: 3, TTFT: 0.5, HasTTFT: true, CompletionTokens: 51, TokensEstimated: true}, 0, false},
		{TracedRequest{E2E: 3, TTFT: 0.5, HasTTFT: true, CompletionTokens: 1, TokensEstimated: true}, 0, true},
	} {
		got, ok := c.r.TPOT()
		if ok != c.ok || got != c.want {
			t.Errorf("%+v: TPOT = %v, %v; want %v, %v", c.r, got, ok, c.want, c.ok)
		}
	}
}

// Each request is judged against every objective at once; one missing a
// value an objective needs is counted as unjudged, never guessed.
func TestExactFold(t *testing.T) {
	slos := []SLO{
		exactSLO("s",
			Objective{Kind: KindTTFT, Threshold: 0.5, Target: 0.9},
			Objective{Kind: KindQueue, Threshold: 0.1, Target: 0.9},
			Objective{Kind: KindError, Target: 0.9, IncludeAbort: true}),
		exactSLO("tokens", Objective{Kind: KindITL, Threshold: 0.1, Target: 0.9}),
	}
	x := NewExact("t", slos, 2)
	reqs := []TracedRequest{
		{Model: "m", E2E: 1, TTFT: 0.2, HasTTFT: true, Queue: 0.05, HasQueue: true, CompletionTokens: 10},               // good
		{Model: "m", E2E: 1, TTFT: 0.2, HasTTFT: true, Queue: 0.05, HasQueue: true, CompletionTokens: 7, Aborted: true}, // abort counts
		{Model: "m", E2E: 1, TTFT: 0.6, HasTTFT: true, Queue: 0.05, HasQueue: true, CompletionTokens: 5},                // slow first token
		{Model: "m", E2E: 2, Queue: 2, HasQueue: true, CompletionTokens: 0},                                             // never produced a token
		{Model: "m", E2E: 1, TTFT: 0.2, HasTTFT: true, CompletionTokens: 4},                                             // no queue time
		{Model: "m", E2E: 1, Queue: 0.05, HasQueue: true, CompletionTokens: 4},                                          // tokens, no ttft
	}
	for i := range reqs {
		if !x.Fold(&reqs[i]) {
			t.Fatalf("request %d not folded", i)
		}
	}
	m := x.Model("m")
	if m == nil || m.Requests != 6 || len(m.SLOs) != 2 {
		t.Fatalf("model: %+v", m)
	}
	s := m.SLOs[0].Exact
	// Judged: the first four. ttft good: 1, 2; queue good: 1, 2, 3;
	// error good: 1, 3, 4 (2 aborted, which counts). All: request 1.
	if s.Requests != 4 || s.Unjudged != 2 || s.GoodRequests != 1 || s.Tokens != 22 || s.GoodTokens != 10 {
		t.Errorf("joint: %+v", s)
	}
	for k, want := range []Counts{{Judged: 4, Good: 2}, {Judged: 4, Good: 3}, {Judged: 4, Good: 3, Aborted: 1}} {
		if s.Objectives[k] != want {
			t.Errorf("objective %d: %+v, want %+v", k, s.Objectives[k], want)
		}
	}
	if m.SLOs[1].Supported || m.SLOs[1].Exact.Requests != 0 {
		t.Errorf("an itl SLO cannot be judged from a request span: %+v", m.SLOs[1])
	}
	// Sampled requests go to their own counts.
	r := TracedRequest{Model: "m", E2E: 1, TTFT: 0.2, HasTTFT: true, Queue: 0.05, HasQueue: true, CompletionTokens: 3, Sampled: true}
	x.Fold(&r)
	if got := x.Model("m").SLOs[0]; got.Sample.Requests != 1 || got.Sample.GoodRequests != 1 || got.Exact.Requests != 4 {
		t.Errorf("sampled: %+v", got)
	}
	// No model, or a third model past the cap of two: not folded.
	if x.Fold(&TracedRequest{E2E: 1, CompletionTokens: 1}) {
		t.Error("a request without a model was folded")
	}
	x.Fold(&TracedRequest{Model: "n", E2E: 1, CompletionTokens: 1})
	if x.Fold(&TracedRequest{Model: "o", E2E: 1, CompletionTokens: 1}) || len(x.Models()) != 2 {
		t.Errorf("model cap: %d models", len(x.Models()))
	}
	// A reload keeps the counts of an unchanged SLO and restarts a changed one.
	changed := exactSLO("tokens", Objective{Kind: KindE2E, Threshold: 1, Target: 0.9})
	x.Reconfigure([]SLO{slos[0], changed})
	got := x.Model("m")
	if got.SLOs[0].Exact.Requests != 4 || !got.SLOs[1].Supported || got.SLOs[1].Exact.Requests != 0 {
		t.Errorf("after reconfigure: %+v", got.SLOs)
	}
}

// A model no request has come for in the forget window is dropped with
// its counts, which frees its place under the cap.
func TestExactForget(t *testing.T) {
	now := time.Unix(1000, 0)
	x := NewExact("t", nil, 2)
	x.now = func() time.Time { return now }
	x.Fold(&TracedRequest{Model: "a", E2E: 1})
	now = now.Add(30 * time.Minute)
	x.Fold(&TracedRequest{Model: "b", E2E: 1})
	if x.Fold(&TracedRequest{Model: "c", E2E: 1}) {
		t.Fatal("a third model past the cap")
	}
	now = now.Add(31 * time.Minute) // a: 61 min ago, b: 31 min
	if n := x.Forget(time.Hour); n != 1 || x.Model("a") != nil || x.Model("b") == nil {
		t.Fatalf("forgot %d: %v", n, x.Models())
	}
	if !x.Fold(&TracedRequest{Model: "c", E2E: 1}) {
		t.Error("the freed place was not taken")
	}
}
