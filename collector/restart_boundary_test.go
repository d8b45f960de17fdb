package collector

import (
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// A new process start time at the edge of the tolerance. The previous
// scrape is at prev; the new process's counts are only the increase when
// it started after that scrape (give or take startTolerance, 2 s, for the
// engine's clock against ours). One that started 3 to 60 s before it had
// counts before we looked: a baseline, never a restart. One that started
// exactly the tolerance before it, or less, is a restart. Scrape times
// with a fraction of a second are the daemon's usual case.
func TestRestartToleranceBoundary(t *testing.T) {
	for _, frac := range []time.Duration{0, 100 * time.Millisecond, 900 * time.Millisecond} {
		for _, c := range []struct {
			before  time.Duration // process start before the previous scrape
			restart bool
		}{
			{2500 * time.Millisecond, false},
			{3 * time.Second, false},
			{3500 * time.Millisecond, false},
			{10 * time.Second, false},
			{30 * time.Second, false},
			{60 * time.Second, false},
			{2 * time.Second, true}, // at the tolerance
			{time.Second, true},
			{0, true},
			{-time.Second, true}, // after the previous scrape
		} {
			prevAt := time.Unix(1_780_000_000, 0).Add(frac) // 2026: start times are plausible Unix seconds
			prev := &snapshot.Snapshot{Time: prevAt, ProcessStart: 1_779_000_000, Models: []snapshot.Model{{Name: "m"}}}
			prev.Models[0].Counters[snapshot.GenerationTokens] = snapshot.Value{V: 500, OK: true}
			start := float64(prevAt.Add(-c.before).UnixNano()) / 1e9
			cur := &snapshot.Snapshot{Time: prevAt.Add(5 * time.Second), ProcessStart: start, Models: []snapshot.Model{{Name: "m"}}}
			cur.Models[0].Counters[snapshot.GenerationTokens] = snapshot.Value{V: 40, OK: true}
			var cont Continuity
			cont.Judge(nil, prev)
			v := cont.Judge(prev, cur)
			if v.Flip != nil {
				t.Errorf("scrape at +%v, process started %v before it: flip %v", frac, c.before, v.Flip)
				continue
			}
			if cur.Restarted != c.restart || cur.Baseline == c.restart {
				t.Errorf("scrape at +%v, process started %v before it: restarted %v baseline %v (%q / %q), want restarted %v",
					frac, c.before, cur.Restarted, cur.Baseline, v.Restart, v.Baseline, c.restart)
			}
		}
	}
}
