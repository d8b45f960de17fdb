package goodput

import "testing"

func TestTrackerReconfigure(t *testing.T) {
	chat := SLO{Name: "chat", Match: Match{Model: mustModel(t, "a")}, Objectives: []Objective{
		{Kind: KindTTFT, Threshold: 0.5, Target: 0.99},
		{Kind: KindE2E, Threshold: 1, Target: 0.99},
	}}
	r := req{ttft: 0.1, e2e: 0.5, tokens: 2}
	a, b := vllmLike("a"), vllmLike("b")
	tr := NewTracker("t", []SLO{chat})
	update(t, tr, snap("t", a.render(nil), b.render(nil)))
	update(t, tr, snap("t", a.render(same(r, 4)), b.render(same(r, 4))))

	// Reload: chat's e2e threshold changes and chat now also matches b.
	changed := chat
	changed.Match.Model = mustModel(t, "a|b")
	changed.Objectives = []Objective{chat.Objectives[0], {Kind: KindE2E, Threshold: 2, Target: 0.99}}
	tr.Reconfigure([]SLO{changed})
	if o := objective(t, tr, "a", "chat", KindTTFT); o.Total.Judged != 4 || o.Interval != (Counts{}) {
		t.Errorf("unchanged ttft after reload: total %+v, interval %+v; want 4 judged, no interval", o.Total, o.Interval)
	}
	if o := objective(t, tr, "a", "chat", KindE2E); o.Total != (Counts{}) {
		t.Errorf("changed e2e kept its total %+v", o.Total)
	}
	if j := sloState(t, tr, "a", "chat").Joint; j.Total != (GoodCounts{}) {
		t.Errorf("joint of a changed SLO kept its total %+v", j.Total)
	}

	// The next interval is measured from the last snapshot, for b too.
	update(t, tr, snap("t", a.render(same(r, 7)), b.render(same(r, 6))))
	checkCounts(t, "a ttft", objective(t, tr, "a", "chat", KindTTFT).Total, Counts{Judged: 7, Good: 7})
	checkCounts(t, "a e2e", objective(t, tr, "a", "chat", KindE2E).Total, Counts{Judged: 3, Good: 3})
	checkCounts(t, "b ttft", objective(t, tr, "b", "chat", KindTTFT).Total, Counts{Judged: 2, Good: 2})

	// Reloading the same SLOs keeps everything, joint totals included.
	before := sloState(t, tr, "a", "chat").Joint.Total
	tr.Reconfigure([]SLO{changed})
	if after := sloState(t, tr, "a", "chat").Joint.Total; after != before || after.Requests.Upper != 3 {
		t.Errorf("joint total after an identical reload = %+v, want %+v with 3 requests", after, before)
	}
}
