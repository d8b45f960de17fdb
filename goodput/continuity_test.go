package goodput

import (
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Per-series reset semantics, with totals worked by hand: every request is
// fast (TTFT 0.1 s under a 0.5 s objective) and has 5 tokens, so judged ==
// good and joint tokens == 5 × the requests judged.
func TestTrackerGlitchesResetsAndBaselines(t *testing.T) {
	slos := []SLO{{Name: "chat", Objectives: []Objective{
		{Kind: KindTTFT, Threshold: 0.5, Target: 0.9},
		{Kind: KindError, Target: 0.99},
	}}}
	e := vllmLike("m")
	fast := req{ttft: 0.1, tokens: 5}
	n := func(k int) *snapshot.Snapshot { return snap("t", e.render(same(fast, k))) }
	tokensDip := func(k int) *snapshot.Snapshot {
		s := n(k)
		s.Models[0].Counters[snapshot.GenerationTokens].V *= 0.9999
		return s
	}
	baseline := func(k int) *snapshot.Snapshot {
		s := n(k)
		s.Baseline = true
		return s
	}
	steps := []struct {
		name   string
		s      *snapshot.Snapshot
		judged float64 // ttft judged (= good) so far
		tokens float64 // joint good tokens (upper) so far
		kinds  []string
	}{
		{"first: a baseline", n(100), 0, 0, nil},
		{"10 more", n(110), 10, 50, nil},
		// Tokens 550 -> 549.945, histograms still: a glitch; nothing judged.
		{"tokens dip", tokensDip(110), 10, 50, []string{DiscontinuityGlitch}},
		// Back to 550: the higher baseline was kept, so nothing either.
		{"tokens back", n(110), 10, 50, nil},
		// Another process whose counts are of unknown age.
		{"baseline snapshot", baseline(200), 10, 50, nil},
		{"5 more", n(205), 15, 75, nil},
		// 205 -> 204 everywhere: more than half, a glitch, three times in a
		// row; the third makes 204 the baseline.
		{"glitch 1", n(204), 15, 75, []string{DiscontinuityGlitch}},
		{"glitch 2", n(204), 15, 75, []string{DiscontinuityGlitch}},
		{"glitch 3", n(204), 15, 75, []string{DiscontinuityGlitch}},
		{"2 more than 204", n(206), 17, 85, nil},
		// 206 -> 100: at most half, each series reset: all 100 are new.
		{"series reset", n(100), 117, 585, []string{DiscontinuityReset}},
	}
	tr := NewTracker("t", slos)
	for _, st := range steps {
		update(t, tr, st.s)
		o := objective(t, tr, "m", "chat", KindTTFT)
		checkCounts(t, st.name+" ttft", o.Total, Counts{Judged: st.judged, Good: st.judged})
		checkNear(t, st.name+" tokens", sloState(t, tr, "m", "chat").Joint.Total.Tokens.Upper, st.tokens)
		kinds := map[string]bool{}
		for _, d := range tr.Discontinuities() {
			kinds[d.Kind] = true
		}
		for _, k := range st.kinds {
			if !kinds[k] {
				t.Errorf("%s: no %s among %+v", st.name, k, tr.Discontinuities())
			}
		}
		if len(st.kinds) == 0 && len(kinds) > 0 {
			t.Errorf("%s: unexpected discontinuities %+v", st.name, tr.Discontinuities())
		}
	}
}

// A family that was present but unusable since the first scrape (say NaN)
// and then becomes usable has counts of unknown age: a baseline, unlike a
// family the engine creates on its first observation.
func TestTrackerFamilyThatFailedThenHeals(t *testing.T) {
	e := vllmLike("m")
	fast := req{ttft: 0.1, tokens: 5}
	tr := NewTracker("t", []SLO{ttftSLO("chat", 0.5)})
	first := snap("t", e.render(same(fast, 100)))
	first.Models[0].Hists[snapshot.TTFT] = nil
	first.Models[0].HistFailed[snapshot.TTFT] = true
	update(t, tr, first)
	update(t, tr, first)
	update(t, tr, snap("t", e.render(same(fast, 120))))
	checkCounts(t, "healed", objective(t, tr, "m", "chat", KindTTFT).Total, Counts{})
	update(t, tr, snap("t", e.render(same(fast, 125))))
	checkCounts(t, "next", objective(t, tr, "m", "chat", KindTTFT).Total, Counts{Judged: 5, Good: 5})
}

// Models that churn faster than ForgetAfter (a new adapter name every
// scrape) are kept to the limit: the absent ones seen longest ago go first,
// present ones never.
func TestTrackerKeepsAtMostTheModelLimit(t *testing.T) {
	tr := NewTracker("t", []SLO{ttftSLO("chat", 0.5)})
	tr.ForgetAfter(time.Hour)
	tr.KeepAtMost(3)
	e := func(name string) snapshot.Model { return vllmLike(name).render(same(req{ttft: 0.1, tokens: 1}, 1)) }
	at := func(sec int64, models ...snapshot.Model) *snapshot.Snapshot {
		s := snap("t", models...)
		s.Time = time.Unix(sec, 0)
		return s
	}
	steps := []struct {
		s    *snapshot.Snapshot
		want string
	}{
		{at(0, e("a"), e("b")), "a b"},
		{at(5, e("c")), "a b c"},
		// d and e arrive: two of the absent (a, b at t=0) must go.
		{at(10, e("d"), e("e")), "c d e"},
		// f, g, h: three present, every absent one goes.
		{at(15, e("f"), e("g"), e("h")), "f g h"},
		// Four present with a limit of three: present models are never
		// dropped (the parser's model_limit keeps a body from having more).
		{at(20, e("f"), e("g"), e("h"), e("i")), "f g h i"},
		{at(25, e("i")), "g h i"},
	}
	for i, st := range steps {
		update(t, tr, st.s)
		var names []string
		for _, m := range tr.Models() {
			names = append(names, m.Model)
		}
		if got := strings.Join(names, " "); got != st.want {
			t.Errorf("step %d: models %q, want %q", i, got, st.want)
		}
	}
}
