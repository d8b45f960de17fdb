package goodput

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// objective returns the state of one objective of one SLO on one model.
func objective(t *testing.T, tr *Tracker, model, slo string, k Kind) *ObjectiveState {
	t.Helper()
	s := sloState(t, tr, model, slo)
	for i := range s.Objectives {
		if s.Objectives[i].Objective.Kind == k {
			return &s.Objectives[i]
		}
	}
	t.Fatalf("model %q slo %q has no objective %q", model, slo, k)
	return nil
}

func sloState(t *testing.T, tr *Tracker, model, slo string) *SLOState {
	t.Helper()
	m := tr.Model(model)
	if m == nil {
		t.Fatalf("no model %q", model)
	}
	for i := range m.SLOs {
		if m.SLOs[i].SLO == slo {
			return &m.SLOs[i]
		}
	}
	t.Fatalf("model %q has no slo %q", model, slo)
	return nil
}

func checkCounts(t *testing.T, what string, got, want Counts) {
	t.Helper()
	checkNear(t, what+".Judged", got.Judged, want.Judged)
	checkNear(t, what+".Good", got.Good, want.Good)
	checkNear(t, what+".Interpolated", got.Interpolated, want.Interpolated)
	checkNear(t, what+".Aborted", got.Aborted, want.Aborted)
}

func update(t *testing.T, tr *Tracker, s *snapshot.Snapshot) {
	t.Helper()
	if err := tr.Update(s); err != nil {
		t.Fatal(err)
	}
}

func ttftSLO(name string, threshold float64) SLO {
	return SLO{Name: name, Objectives: []Objective{{Kind: KindTTFT, Threshold: threshold, Target: 0.9}}}
}

func TestTrackerThresholds(t *testing.T) {
	slos := []SLO{ttftSLO("on", 0.5), ttftSLO("between", 0.3), ttftSLO("above", 3000)}
	e := vllmLike("m")
	base := same(req{ttft: 0.2, tokens: 10}, 5)
	more := concat(base, same(req{ttft: 0.2, tokens: 10}, 6), same(req{ttft: 0.4, tokens: 10}, 2), same(req{ttft: 0.6, tokens: 10}, 2))
	tr := NewTracker("t", slos)
	update(t, tr, snap("t", e.render(base)))
	update(t, tr, snap("t", e.render(more)))

	// The interval holds 6 at 0.2, 2 at 0.4, 2 at 0.6: 6 under 0.25, 8 under 0.5.
	checkCounts(t, "on", objective(t, tr, "m", "on", KindTTFT).Total, Counts{Judged: 10, Good: 8})
	// 6 + (8−6)·(0.3−0.25)/(0.5−0.25) = 6.4, with the 2 in (0.25, 0.5] uncertain.
	checkCounts(t, "between", objective(t, tr, "m", "between", KindTTFT).Total, Counts{Judged: 10, Good: 6.4, Interpolated: 2})
	// Above the last bound (2560 s): all 10 are under it, none in +Inf.
	checkCounts(t, "above", objective(t, tr, "m", "above", KindTTFT).Total, Counts{Judged: 10, Good: 10})

	// One objective: the bounds are its good requests give or take the 2
	// interpolated ones, 6.4 ± 2 of 10 (the truth, 6, lies inside; the
	// interpolated 6.4 alone is no bound); 10 tokens each.
	j := sloState(t, tr, "m", "between").Joint
	checkNear(t, "between lower", j.Interval.Attainment.Lower, 0.44)
	checkNear(t, "between upper", j.Interval.Attainment.Upper, 0.84)
	checkNear(t, "between requests", j.Total.Requests.Lower, 4.4)
	checkNear(t, "between requests upper", j.Total.Requests.Upper, 8.4)
	checkNear(t, "between tokens", j.Total.Tokens.Upper, 84)
	if j.RequestsSource != RequestsFromE2E {
		t.Errorf("RequestsSource = %q, want %q", j.RequestsSource, RequestsFromE2E)
	}
}

func TestTrackerZeroTraffic(t *testing.T) {
	slos := []SLO{{Name: "chat", Objectives: []Objective{
		{Kind: KindTTFT, Threshold: 0.5, Target: 0.99},
		{Kind: KindError, Target: 0.99},
	}}}
	e := vllmLike("m")
	reqs := same(req{ttft: 0.1, tokens: 3}, 20)
	tr := NewTracker("t", slos)
	for range 3 {
		update(t, tr, snap("t", e.render(reqs)))
	}
	s := sloState(t, tr, "m", "chat")
	for _, o := range s.Objectives {
		checkCounts(t, string(o.Objective.Kind)+" total", o.Total, Counts{})
		checkCounts(t, string(o.Objective.Kind)+" interval", o.Interval, Counts{})
		if p, ok := o.Interval.Attainment(); ok {
			t.Errorf("%s: attainment %v with no traffic", o.Objective.Kind, p)
		}
	}
	if s.Joint.Interval.OK || s.Joint.Interval != (JointInterval{}) {
		t.Errorf("joint interval with no traffic = %+v, want zero", s.Joint.Interval)
	}
	if s.Joint.Total != (GoodCounts{}) {
		t.Errorf("joint total with no traffic = %+v, want zero", s.Joint.Total)
	}
	// Traffic resumes: only the new requests count.
	update(t, tr, snap("t", e.render(concat(reqs, same(req{ttft: 0.1, tokens: 3}, 4)))))
	checkCounts(t, "ttft after", objective(t, tr, "m", "chat", KindTTFT).Total, Counts{Judged: 4, Good: 4})
	checkNear(t, "tokens after", sloState(t, tr, "m", "chat").Joint.Total.Tokens.Upper, 12)
}

func TestTrackerCounterReset(t *testing.T) {
	slos := []SLO{{Name: "chat", Objectives: []Objective{
		{Kind: KindTTFT, Threshold: 0.5, Target: 0.99},
		{Kind: KindError, Target: 0.99},
	}}}
	e := vllmLike("m")
	good := req{ttft: 0.1, tokens: 5}
	slow := req{ttft: 1.0, tokens: 5}
	failed := req{ttft: 0.1, tokens: 5, reason: "error"}
	run1 := concat(same(good, 100), same(good, 8), same(slow, 2))
	run2 := concat(same(good, 2), same(slow, 1), same(failed, 1))
	steps := []struct {
		name      string
		s         *snapshot.Snapshot
		ttft, err Counts  // totals after the step
		tokens    float64 // upper-bound goodput tokens: min attainment × tokens
	}{
		{"baseline", snap("t", e.render(run1[:100])), Counts{}, Counts{}, 0},
		{"steady", snap("t", e.render(run1)), Counts{Judged: 10, Good: 8}, Counts{Judged: 10, Good: 10}, 0.8 * 50},
		// The process restarted and the collector says so: 4 new requests,
		// 3 fast, 1 failed.
		{"restarted", func() *snapshot.Snapshot {
			s := snap("t", e.render(run2))
			s.Restarted = true
			return s
		}(), Counts{Judged: 14, Good: 11}, Counts{Judged: 14, Good: 13}, 40 + 0.75*20},
		// Restarted again: 2 requests, every count went down, which is
		// how the collector tells a restart without a start time.
		{"counts went down", func() *snapshot.Snapshot {
			s := snap("t", e.render(run2[:2]))
			s.Restarted = true
			return s
		}(), Counts{Judged: 16, Good: 13}, Counts{Judged: 16, Good: 15}, 55 + 10},
		// The same 2-request body again and then a lone dip, unflagged:
		// ttft 2 -> 1 (at most half: a reset of that histogram, +1 good),
		// stop 2 -> 1 (a reset, +1), tokens 10 -> 5 (a reset, +5 at
		// attainment 1).
		{"same", snap("t", e.render(run2[:2])), Counts{Judged: 16, Good: 13}, Counts{Judged: 16, Good: 15}, 65},
		{"series reset alone", snap("t", e.render(run2[:1])), Counts{Judged: 17, Good: 14}, Counts{Judged: 17, Good: 16}, 70},
	}
	tr := NewTracker("t", slos)
	for _, st := range steps {
		update(t, tr, st.s)
		checkCounts(t, st.name+" ttft", objective(t, tr, "m", "chat", KindTTFT).Total, st.ttft)
		checkCounts(t, st.name+" error", objective(t, tr, "m", "chat", KindError).Total, st.err)
		checkNear(t, st.name+" tokens", sloState(t, tr, "m", "chat").Joint.Total.Tokens.Upper, st.tokens)
	}
}

func TestTrackerLayoutChange(t *testing.T) {
	v0 := []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}
	v1 := ttftBounds()
	model := func(h *snapshot.Histogram) snapshot.Model {
		m := snapshot.Model{Name: "m"}
		m.Hists[snapshot.TTFT] = h
		return m
	}
	tr := NewTracker("t", []SLO{ttftSLO("chat", 0.5)})
	update(t, tr, snap("t", model(histOf(v0, repeat(0.1, 50)...))))
	// New buckets with 60 observations: more than half the old 50, so no
	// fresh start; their age under the new bounds is unknown, and they only
	// set the histogram's baseline (adding 60 would re-add a lifetime on
	// every change).
	after := append(repeat(0.1, 55), repeat(0.6, 5)...)
	update(t, tr, snap("t", model(histOf(v1, after...))))
	checkCounts(t, "after change", objective(t, tr, "m", "chat", KindTTFT).Total, Counts{})
	if d := tr.Discontinuities(); len(d) != 1 || d[0].Kind != DiscontinuityLayoutChange {
		t.Errorf("discontinuities %+v, want one layout change", d)
	}
	// Same layout again: a plain difference, 10 slow requests.
	more := append(after, repeat(0.7, 10)...)
	update(t, tr, snap("t", model(histOf(v1, more...))))
	checkCounts(t, "steady", objective(t, tr, "m", "chat", KindTTFT).Total, Counts{Judged: 10, Good: 0})
	// The engine restarted with the old buckets and 4 fast requests: 4 is
	// at most half of 70, a fresh start of this histogram, all new.
	update(t, tr, snap("t", model(histOf(v0, repeat(0.1, 4)...))))
	checkCounts(t, "reset with new layout", objective(t, tr, "m", "chat", KindTTFT).Total, Counts{Judged: 14, Good: 4})
}

// A layout that keeps flapping between two bucket sets (two engines with
// different buckets behind one address) adds nothing, and once it changed
// more than twice in ten snapshots the objective is left out of judging,
// with llm_slo_supported 0, until the layout holds for ten snapshots.
func TestTrackerFlappingLayout(t *testing.T) {
	v0 := []float64{0.1, 0.25, 0.5, 1}
	v1 := []float64{0.1, 0.3, 0.5, 1}
	model := func(h *snapshot.Histogram) snapshot.Model {
		m := snapshot.Model{Name: "m"}
		m.Hists[snapshot.TTFT] = h
		return m
	}
	tr := NewTracker("t", []SLO{ttftSLO("chat", 0.5)})
	n := 100
	for i := range 8 {
		bounds := v0
		if i%2 == 1 {
			bounds = v1
		}
		n += 2 // 2 more requests every snapshot, all fast
		update(t, tr, snap("t", model(histOf(bounds, repeat(0.1, n)...))))
		o := objective(t, tr, "m", "chat", KindTTFT)
		// Snapshot 0 is the baseline; 1 and 2 are layout changes (rebased,
		// nothing added); from 3 on the layout changed 3 times: unstable.
		wantUnstable := i >= 3
		if o.Resolution.Unstable != wantUnstable || o.Resolution.Supported == wantUnstable {
			t.Errorf("snapshot %d: resolution %+v, want unstable %v", i, o.Resolution, wantUnstable)
		}
		checkCounts(t, "flapping", o.Total, Counts{})
	}
	// Stable from here (v1 held, snapshot 7 was the last change): the last
	// change leaves the ten-snapshot window after 8 more snapshots with v1
	// (changes at 3,4,...,7 must drop below three in the window).
	stableAt := -1
	for i := 8; i < 30; i++ {
		n += 2
		update(t, tr, snap("t", model(histOf(v1, repeat(0.1, n)...))))
		if o := objective(t, tr, "m", "chat", KindTTFT); o.Resolution.Supported && stableAt < 0 {
			stableAt = i
			checkCounts(t, "first stable interval", o.Total, Counts{Judged: 2, Good: 2})
		}
	}
	// Changes at snapshots 1..7 ; at snapshot i the window holds
	// snapshots i-9..i, so it holds at most two changes (6 and 7) from
	// i = 15 on.
	if stableAt != 15 {
		t.Errorf("judged again from snapshot %d, want 15", stableAt)
	}
}

func TestTrackerUnsupported(t *testing.T) {
	slos := []SLO{
		{Name: "chat", Objectives: []Objective{{Kind: KindTTFT, Threshold: 0.5, Target: 0.99}, {Kind: KindError, Target: 0.99}}},
		{Name: "queue", Objectives: []Objective{{Kind: KindTTFT, Threshold: 0.5, Target: 0.99}, {Kind: KindQueue, Threshold: 1, Target: 0.99}}},
	}
	llama := engineModel{name: "lfm", tokens: true} // llama.cpp: no histograms, no finish reasons
	noQueue := vllmLike("noqueue")
	noQueue.has[snapshot.QueueTime] = false
	reqs := same(req{ttft: 0.1, tokens: 4}, 10)
	tr := NewTracker("t", slos)
	update(t, tr, snap("t", llama.render(reqs[:5]), noQueue.render(reqs[:5])))
	update(t, tr, snap("t", llama.render(reqs), noQueue.render(reqs)))

	for _, c := range []struct {
		model, slo string
		k          Kind
		supported  bool
		total      Counts
	}{
		{"lfm", "chat", KindTTFT, false, Counts{}},
		{"lfm", "chat", KindError, false, Counts{}},
		{"noqueue", "queue", KindTTFT, true, Counts{Judged: 5, Good: 5}},
		{"noqueue", "queue", KindQueue, false, Counts{}},
		{"noqueue", "chat", KindError, true, Counts{Judged: 5, Good: 5}},
	} {
		o := objective(t, tr, c.model, c.slo, c.k)
		if o.Resolution.Supported != c.supported {
			t.Errorf("%s/%s/%s supported = %v, want %v", c.model, c.slo, c.k, o.Resolution.Supported, c.supported)
		}
		checkCounts(t, c.model+"/"+c.slo+"/"+string(c.k), o.Total, c.total)
		if _, ok := o.Interval.Attainment(); ok != c.supported {
			t.Errorf("%s/%s/%s has attainment = %v, want %v", c.model, c.slo, c.k, ok, c.supported)
		}
	}
	for _, c := range []struct {
		model, slo string
		supported  bool
	}{{"lfm", "chat", false}, {"lfm", "queue", false}, {"noqueue", "queue", false}, {"noqueue", "chat", true}} {
		j := sloState(t, tr, c.model, c.slo).Joint
		if j.Supported != c.supported || j.Interval.OK != c.supported {
			t.Errorf("%s/%s joint supported = %v, interval ok = %v, want %v", c.model, c.slo, j.Supported, j.Interval.OK, c.supported)
		}
		if !c.supported && j.Total != (GoodCounts{}) {
			t.Errorf("%s/%s unsupported joint has totals %+v", c.model, c.slo, j.Total)
		}
	}
	if j := sloState(t, tr, "lfm", "chat").Joint; j.RequestsSource != "" || !j.TokensSupported {
		t.Errorf("llama.cpp joint sources = %q, tokens %v; want none and tokens", j.RequestsSource, j.TokensSupported)
	}
}

func TestTrackerSeveralModels(t *testing.T) {
	slos := []SLO{
		{Name: "chat", Match: Match{Model: mustModel(t, "llama-3.*")}, Objectives: []Objective{{Kind: KindTTFT, Threshold: 0.5, Target: 0.99}}},
		{Name: "batch", Match: Match{Model: mustModel(t, "qwen.*")}, Objectives: []Objective{{Kind: KindE2E, Threshold: 10, Target: 0.9}}},
		{Name: "elsewhere", Match: Match{Targets: []string{"other-target"}}, Objectives: []Objective{{Kind: KindTTFT, Threshold: 1, Target: 0.9}}},
	}
	llama, other, qwen := vllmLike("llama-3.1-8b"), vllmLike("mistral"), vllmLike("qwen2-7b")
	r := req{ttft: 0.7, e2e: 4}
	tr := NewTracker("vllm-0", slos)
	update(t, tr, snap("vllm-0", llama.render(nil), other.render(nil), qwen.render(nil)))
	update(t, tr, snap("vllm-0", llama.render(same(r, 3)), other.render(same(r, 5)), qwen.render(same(r, 7))))

	var names []string
	for _, m := range tr.Models() {
		var s []string
		for _, st := range m.SLOs {
			s = append(s, st.SLO)
		}
		names = append(names, m.Model+":"+strings.Join(s, ","))
	}
	if got, want := strings.Join(names, " "), "llama-3.1-8b:chat mistral: qwen2-7b:batch"; got != want {
		t.Errorf("models and SLOs = %q, want %q", got, want)
	}
	checkCounts(t, "llama ttft", objective(t, tr, "llama-3.1-8b", "chat", KindTTFT).Total, Counts{Judged: 3, Good: 0})
	checkCounts(t, "qwen e2e", objective(t, tr, "qwen2-7b", "batch", KindE2E).Total, Counts{Judged: 7, Good: 7})
}

func TestTrackerTPOTResolution(t *testing.T) {
	slos := []SLO{{Name: "chat", Objectives: []Objective{{Kind: KindTPOT, Threshold: 0.05, Target: 0.9}}}}
	// Nine short answers at 40 ms per token and one long one at 100 ms: 90 %
	// of requests meet 50 ms, but only 90 of 190 inter-token gaps do.
	reqs := concat(same(req{tpot: 0.04, tokens: 11}, 9), same(req{tpot: 0.1, tokens: 101}, 1))
	withTPOT := vllmLike("v1")
	noTPOT := vllmLike("v0")
	noTPOT.has[snapshot.TPOT] = false
	tr := NewTracker("t", slos)
	update(t, tr, snap("t", noTPOT.render(nil), withTPOT.render(nil)))
	update(t, tr, snap("t", noTPOT.render(reqs), withTPOT.render(reqs)))

	o := objective(t, tr, "v1", "chat", KindTPOT)
	want := Resolution{Supported: true, Hist: snapshot.TPOT, Source: "vllm:request_time_per_output_token_seconds"}
	if o.Resolution != want {
		t.Errorf("v1 resolution = %+v, want %+v", o.Resolution, want)
	}
	checkCounts(t, "v1 tpot", o.Total, Counts{Judged: 10, Good: 9})

	o = objective(t, tr, "v0", "chat", KindTPOT)
	want = Resolution{Supported: true, Hist: snapshot.ITL, Source: "vllm:inter_token_latency_seconds", Fallback: true}
	if o.Resolution != want {
		t.Errorf("v0 resolution = %+v, want %+v", o.Resolution, want)
	}
	// Judged per token: 190 gaps, 90 good, counted as tokens, never as
	// requests.
	checkCounts(t, "v0 tpot tokens", o.Tokens, Counts{Judged: 190, Good: 90})
	checkCounts(t, "v0 tpot requests", o.Total, Counts{})
}

// An engine that creates its per-request TPOT histogram late (on the
// first finished request, after the inter-token one): tpot is judged per
// token until then, in its own token counts, so that the tpot request
// count never exceeds the finished requests, and from then on per
// request. The joint bounds use the per-token judgement only as the
// range it allows.
func TestTrackerTPOTHistogramCreatedLate(t *testing.T) {
	slos := []SLO{{Name: "chat", Objectives: []Objective{
		{Kind: KindTPOT, Threshold: 0.05, Target: 0.9},
		{Kind: KindE2E, Threshold: 10, Target: 0.9},
	}}}
	late := vllmLike("m")
	late.has[snapshot.TPOT] = false
	full := vllmLike("m")
	// The engine after serving each batch (cumulative): 100-token
	// requests at 40 ms per token (99 gaps each), and from the fourth
	// snapshot one at 100 ms per token (e2e 9.9 s, within 10 s).
	fast := req{tpot: 0.04, e2e: 4, tokens: 100}
	slow := req{tpot: 0.1, e2e: 9.9, tokens: 100}
	batches := [][]req{nil, same(fast, 1), same(fast, 3), concat(same(fast, 5), same(slow, 1)), concat(same(fast, 9), same(slow, 1))}
	// The TPOT histogram exists from the third snapshot on; ITL and e2e
	// from the start.
	tr := NewTracker("t", slos)
	var finished float64
	for i, b := range batches {
		e := late
		if i >= 2 {
			e = full
		}
		if i > 0 {
			finished = float64(len(b))
		}
		update(t, tr, snap("t", e.render(b)))
		o := objective(t, tr, "m", "chat", KindTPOT)
		e2e := objective(t, tr, "m", "chat", KindE2E)
		if o.Total.Judged > e2e.Total.Judged || o.Total.Judged > finished {
			t.Errorf("snapshot %d: tpot judged %v requests, more than the %v finished (e2e judged %v)", i, o.Total.Judged, finished, e2e.Total.Judged)
		}
		if got := o.Resolution.Fallback; got != (i < 2) {
			t.Errorf("snapshot %d: fallback %v", i, got)
		}
	}
	o := objective(t, tr, "m", "chat", KindTPOT)
	// Snapshot 1: the first request's 99 gaps, per token. Snapshot 2: the
	// TPOT histogram appears holding the 3 requests so far (a family first
	// seen on a known model counts from zero): per request from then on.
	checkCounts(t, "tokens", o.Tokens, Counts{Judged: 99, Good: 99})
	checkCounts(t, "requests", o.Total, Counts{Judged: 10, Good: 9})
	checkCounts(t, "e2e", objective(t, tr, "m", "chat", KindE2E).Total, Counts{Judged: 10, Good: 10})
}

// Judged per token, tpot enters the joint as the range it allows: at
// least 1 − failing tokens / requests, at most 1.
func TestTrackerJointPerTokenTPOT(t *testing.T) {
	slos := []SLO{{Name: "chat", Objectives: []Objective{
		{Kind: KindTPOT, Threshold: 0.05, Target: 0.9},
		{Kind: KindE2E, Threshold: 5, Target: 0.9},
	}}}
	e := vllmLike("m")
	e.has[snapshot.TPOT] = false
	// 10 requests of 11 tokens (10 gaps): 9 at 40 ms, one at 100 ms (its
	// 10 gaps fail); e2e 4 s except the slow one, 9.9 s. e2e attainment
	// 0.9; tpot per token 90/100 good, 10 failing tokens over 10 requests:
	// floor 1 − 10/10 = 0. Joint: lower max(0, 0 + 0.9 − 1) = 0, upper
	// min(1, 0.9) = 0.9. Judging the token share as a request share would
	// have given lower 0.8, which the truth (0.9 here) does not contradict
	// but nothing guarantees.
	reqs := concat(same(req{tpot: 0.04, e2e: 4, tokens: 11}, 9), same(req{tpot: 0.1, e2e: 9.9, tokens: 11}, 1))
	tr := NewTracker("t", slos)
	update(t, tr, snap("t", e.render(nil)))
	update(t, tr, snap("t", e.render(reqs)))
	j := sloState(t, tr, "m", "chat").Joint
	if !near(j.Interval.Attainment.Lower, 0) || !near(j.Interval.Attainment.Upper, 0.9) {
		t.Errorf("joint attainment = %+v, want {0 0.9}", j.Interval.Attainment)
	}
	// One failing token in 10 requests: floor 0.9.
	checkNear(t, "floor", perTokenFloor(Counts{Judged: 100, Good: 99}, 10), 0.9)
	checkNear(t, "floor with the straddling bucket", perTokenFloor(Counts{Judged: 100, Good: 99, Interpolated: 2}, 10), 0.7)
	checkNear(t, "floor without requests", perTokenFloor(Counts{Judged: 100, Good: 100}, 0), 0)
}

func TestTrackerFirstAppearance(t *testing.T) {
	slos := []SLO{{Name: "chat", Objectives: []Objective{{Kind: KindTTFT, Threshold: 0.5, Target: 0.9}}},
		{Name: "queue", Objectives: []Objective{{Kind: KindQueue, Threshold: 1, Target: 0.9}}}}
	r := req{ttft: 0.1}
	a, b := vllmLike("a"), vllmLike("b")
	aNoQueue := vllmLike("a")
	aNoQueue.has[snapshot.QueueTime] = false

	tr := NewTracker("t", slos)
	// The first snapshot is a baseline: its 10 requests happened at some
	// unknown time before we looked.
	update(t, tr, snap("t", aNoQueue.render(same(r, 10))))
	checkCounts(t, "a after baseline", objective(t, tr, "a", "chat", KindTTFT).Total, Counts{})
	// Model b was loaded while the target ran: its 7 requests are new. a's
	// queue histogram appears for the first time on a known model: the
	// engine created it on its first observation since the last snapshot,
	// so its 15 count from zero.
	update(t, tr, snap("t", a.render(same(r, 15)), b.render(same(r, 7))))
	checkCounts(t, "a ttft", objective(t, tr, "a", "chat", KindTTFT).Total, Counts{Judged: 5, Good: 5})
	checkCounts(t, "b ttft", objective(t, tr, "b", "chat", KindTTFT).Total, Counts{Judged: 7, Good: 7})
	checkCounts(t, "a queue first seen", objective(t, tr, "a", "queue", KindQueue).Total, Counts{Judged: 15, Good: 15})
	update(t, tr, snap("t", a.render(same(r, 16)), b.render(same(r, 7))))
	checkCounts(t, "a queue next", objective(t, tr, "a", "queue", KindQueue).Total, Counts{Judged: 16, Good: 16})

	// A first snapshot marked Restarted: the process started since the
	// collector last looked, so everything in it is recent.
	tr = NewTracker("t", slos)
	s := snap("t", a.render(same(r, 3)))
	s.Restarted = true
	update(t, tr, s)
	checkCounts(t, "restarted first", objective(t, tr, "a", "chat", KindTTFT).Total, Counts{Judged: 3, Good: 3})
}

func TestTrackerErrorObjective(t *testing.T) {
	slos := []SLO{
		{Name: "strict", Objectives: []Objective{{Kind: KindError, Target: 0.99, IncludeAbort: true}}},
		{Name: "lenient", Objectives: []Objective{{Kind: KindError, Target: 0.99}}},
	}
	m := func(f map[string]float64) snapshot.Model { return snapshot.Model{Name: "m", Finished: f} }
	tr := NewTracker("t", slos)
	update(t, tr, snap("t", m(map[string]float64{"stop": 10, "error": 1})))
	update(t, tr, snap("t", m(map[string]float64{"stop": 100, "length": 5, "error": 4, "abort": 2})))
	// 90 stop + 5 length + 3 error + 2 abort = 100 finished; abort is a new
	// label child on a known model, so all of it is new.
	checkCounts(t, "lenient", objective(t, tr, "m", "lenient", KindError).Total, Counts{Judged: 100, Good: 97, Aborted: 2})
	checkCounts(t, "strict", objective(t, tr, "m", "strict", KindError).Total, Counts{Judged: 100, Good: 95, Aborted: 2})
	if j := sloState(t, tr, "m", "strict").Joint; j.RequestsSource != RequestsFromFinished || j.Total.Requests.Lower != 95 {
		t.Errorf("strict joint = %+v, want 95 requests from finished", j)
	}
}

func TestTrackerJoint(t *testing.T) {
	slos := []SLO{{Name: "chat", Objectives: []Objective{
		{Kind: KindTTFT, Threshold: 0.5, Target: 0.99},
		{Kind: KindE2E, Threshold: 1, Target: 0.99},
		{Kind: KindError, Target: 0.99},
	}}}
	// Ten requests of 20 tokens: two slow to start, a different one slow to
	// finish. ttft 0.8, e2e 0.9, error 1: lower 0.8+0.9+1−2 = 0.7, upper 0.8.
	reqs := concat(same(req{ttft: 0.6, e2e: 0.8, tokens: 20}, 2), same(req{ttft: 0.1, e2e: 1.5, tokens: 20}, 1), same(req{ttft: 0.1, e2e: 0.8, tokens: 20}, 7))
	e := vllmLike("m")
	tr := NewTracker("t", slos)
	update(t, tr, snap("t", e.render(nil)))
	update(t, tr, snap("t", e.render(reqs)))
	j := sloState(t, tr, "m", "chat").Joint
	want := JointInterval{OK: true, Attainment: Bounds{0.7, 0.8}, Requests: 10, Tokens: 200,
		Good: GoodCounts{Requests: Bounds{7, 8}, Tokens: Bounds{140, 160}}}
	if !jointNear(j.Interval, want) {
		t.Errorf("interval = %+v, want %+v", j.Interval, want)
	}
	if !near(j.Total.Requests.Lower, 7) || !near(j.Total.Tokens.Upper, 160) {
		t.Errorf("total = %+v", j.Total)
	}
}

func jointNear(a, b JointInterval) bool {
	return a.OK == b.OK && near(a.Attainment.Lower, b.Attainment.Lower) && near(a.Attainment.Upper, b.Attainment.Upper) &&
		near(a.Requests, b.Requests) && near(a.Tokens, b.Tokens) &&
		near(a.Good.Requests.Lower, b.Good.Requests.Lower) && near(a.Good.Requests.Upper, b.Good.Requests.Upper) &&
		near(a.Good.Tokens.Lower, b.Good.Tokens.Lower) && near(a.Good.Tokens.Upper, b.Good.Tokens.Upper)
}

func TestTrackerAbsentModel(t *testing.T) {
	tr := NewTracker("t", []SLO{ttftSLO("chat", 0.5)})
	e := vllmLike("m")
	r := req{ttft: 0.1}
	update(t, tr, snap("t", e.render(same(r, 1))))
	update(t, tr, snap("t", e.render(same(r, 4))))
	update(t, tr, snap("t")) // the model's families failed to parse this time
	m := tr.Model("m")
	o := objective(t, tr, "m", "chat", KindTTFT)
	if m.Present || o.Interval != (Counts{}) {
		t.Errorf("absent model: present %v, interval %+v", m.Present, o.Interval)
	}
	checkCounts(t, "kept total", o.Total, Counts{Judged: 3, Good: 3})
	// Back again: measured from the last snapshot that had it.
	update(t, tr, snap("t", e.render(same(r, 9))))
	checkCounts(t, "back", o.Total, Counts{Judged: 8, Good: 8})
	checkCounts(t, "back interval", o.Interval, Counts{Judged: 5, Good: 5})
}

func TestTrackerWrongTarget(t *testing.T) {
	tr := NewTracker("a", nil)
	if err := tr.Update(snap("b")); err == nil {
		t.Error("Update(snapshot of b) on the tracker of a = nil, want an error")
	}
	if err := tr.Update(nil); err == nil {
		t.Error("Update(nil) = nil, want an error")
	}
}

// With ForgetAfter, models that churn away are dropped once absent for
// longer than the horizon; those still listed, and those absent for less,
// stay with their totals.
func TestTrackerForgetsChurnedModels(t *testing.T) {
	tr := NewTracker("t", []SLO{ttftSLO("chat", 0.5)})
	tr.ForgetAfter(time.Hour)
	r := req{ttft: 0.1}
	at := func(min int, models ...snapshot.Model) *snapshot.Snapshot {
		s := snap("t", models...)
		s.Time = s.Time.Add(time.Duration(min) * time.Minute)
		return s
	}
	keep, gone := vllmLike("keep"), vllmLike("gone")
	update(t, tr, at(0, keep.render(same(r, 1)), gone.render(same(r, 1))))
	update(t, tr, at(1, keep.render(same(r, 2)), gone.render(same(r, 3))))
	for m := 2; m <= 60; m += 10 {
		update(t, tr, at(m, keep.render(same(r, 2+m))))
	}
	if tr.Model("gone") == nil {
		t.Fatal("a model absent for under an hour was dropped")
	}
	update(t, tr, at(62, keep.render(same(r, 70))))
	if tr.Model("gone") != nil {
		t.Error("a model absent for over an hour was kept")
	}
	if m := tr.Model("keep"); m == nil || !m.Present || len(tr.Models()) != 1 {
		t.Fatalf("models: %+v", tr.Models())
	}
	checkCounts(t, "kept model's total", objective(t, tr, "keep", "chat", KindTTFT).Total, Counts{Judged: 69, Good: 69})
	// Back after being forgotten: a new model, measured from then on.
	update(t, tr, at(63, keep.render(same(r, 71)), gone.render(same(r, 10))))
	checkCounts(t, "returned model", objective(t, tr, "gone", "chat", KindTTFT).Total, Counts{Judged: 10, Good: 10})
}

// A NaN bucket (which the parser rejects, but the maths must not trust
// that) is clamped like any other bad value: no NaN reaches a counter.
func TestTrackerNaNBucket(t *testing.T) {
	tr := NewTracker("t", []SLO{ttftSLO("chat", 0.5)})
	e := vllmLike("m")
	r := req{ttft: 0.1}
	update(t, tr, snap("t", e.render(same(r, 1))))
	m := e.render(same(r, 5))
	m.Hists[snapshot.TTFT].Cumulative[3] = math.NaN()
	update(t, tr, snap("t", m))
	o := objective(t, tr, "m", "chat", KindTTFT)
	if math.IsNaN(o.Total.Good) || math.IsNaN(o.Total.Judged) || o.Total.Good > o.Total.Judged {
		t.Fatalf("NaN leaked: %+v", o.Total)
	}
}
