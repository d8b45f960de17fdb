package goodput

import (
	"fmt"
	"testing"
	"time"
)

// Spans naming 100 made-up models take the few slots of models the engine
// has not shown, and no more; the engine's own models still have all of
// the model limit. Worked by hand with a limit of 10: 4 made-up models
// kept, 96 refused; the real model and 9 more shown ones kept, the 11th
// shown one refused; made-up models forgotten 5 minutes after their last
// request, real ones not.
func TestUnshownModelsCannotLockOutShownOnes(t *testing.T) {
	clock := time.Unix(0, 0)
	x := NewExact("t", []SLO{exactSLO("e2e", Objective{Kind: KindE2E, Threshold: 1, Target: 0.9})}, 10)
	x.now = func() time.Time { return clock }
	req := func(model string) *TracedRequest {
		return &TracedRequest{Model: model, E2E: 0.5, CompletionTokens: 3}
	}
	junk := 0
	for i := range 100 {
		if x.FoldUnshown(req(fmt.Sprintf("made-up-%03d", i))) {
			junk++
		}
	}
	if junk != UnshownModels {
		t.Fatalf("%d made-up models kept, want %d", junk, UnshownModels)
	}
	if !x.Fold(req("real")) || x.Model("real").Requests != 1 {
		t.Fatal("the engine's model was refused after the made-up ones")
	}
	for i := range 9 {
		if !x.Fold(req(fmt.Sprintf("shown-%d", i))) {
			t.Fatalf("shown model %d refused with %d of 10 slots taken", i, i+1)
		}
	}
	if x.Fold(req("shown-10")) {
		t.Error("an 11th shown model was kept past the limit of 10")
	}
	// A made-up model that keeps coming keeps its slot; one that stops is
	// forgotten after UnshownTTL; shown models stay for the full hour.
	clock = clock.Add(UnshownTTL - time.Second)
	x.FoldUnshown(req("made-up-000"))
	x.Fold(req("real"))
	clock = clock.Add(2 * time.Second)
	if n := x.Forget(time.Hour); n != UnshownModels-1 {
		t.Errorf("forgot %d models, want the %d made-up ones without a request for 5 minutes", n, UnshownModels-1)
	}
	if x.Model("made-up-000") == nil || x.Model("real") == nil || x.Model("shown-8") == nil {
		t.Error("a model with a recent request, or a shown one, was forgotten")
	}
	if !x.FoldUnshown(req("made-up-new")) {
		t.Error("a freed slot was not given to a new unshown model")
	}
}

// A real model whose spans come before the engine's first scrape starts in
// the unshown budget and moves to the shown one, keeping its counts, once
// the engine shows it.
func TestUnshownModelMovesWhenShown(t *testing.T) {
	x := NewExact("t", []SLO{exactSLO("e2e", Objective{Kind: KindE2E, Threshold: 1, Target: 0.9})}, 10)
	r := &TracedRequest{Model: "early", E2E: 0.5, CompletionTokens: 3}
	x.FoldUnshown(r)
	x.FoldUnshown(r)
	if m := x.Model("early"); m == nil || !m.Unshown {
		t.Fatalf("early model: %+v", m)
	}
	x.Fold(r)
	if m := x.Model("early"); m.Unshown || m.Requests != 3 || m.SLOs[0].Exact.GoodRequests != 3 {
		t.Errorf("after the engine showed it: %+v", m)
	}
	// Its unshown slot is free again.
	for i := range UnshownModels {
		if !x.FoldUnshown(&TracedRequest{Model: fmt.Sprintf("u%d", i), E2E: 1}) {
			t.Errorf("unshown slot %d not free", i)
		}
	}
}
