package collector

import (
	"fmt"
	"slices"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// How a target's consecutive snapshots relate is decided here, once per
// scrape, before anything is counted:
//
//   - continuation: the same process; each series is judged on its own by
//     the goodput layer (a series that went down has reset or glitched,
//     the others continue), as Prometheus' rate() does.
//   - restart (Snapshot.Restarted): a new process that started after the
//     previous scrape, seen as a new process start time, or, for engines
//     that publish none, as every cumulative series going down at once.
//     Its counts all happened since the previous scrape: they are the
//     increase.
//   - baseline (Snapshot.Baseline): another process answers whose counts
//     are of unknown age (it started before the previous scrape, or the
//     engine behind the address changed). Its counts only set baselines.
//   - flipping: the address reaches more than one engine process (a load
//     balancer in front of replicas): a start time seen earlier comes back,
//     or counters that all went down climb straight back to where they
//     were. Nothing from such a target can be counted; it is an error
//     (ReasonMultipleEngines) until it answers from one process for
//     steadyScrapes scrapes in a row, and then counting resumes from a
//     baseline.

// Process start times are the engine's clock, scrape times ours; a new
// process whose start time is within this much before our previous scrape
// is taken to have started after it.
const startTolerance = 2.0 // seconds

// After a restart seen only in the counters, this many scrapes are compared
// with the snapshot before it, to tell a restart from an alternation.
const flipLookback = 3

// Scrapes in a row from one process before a flipping target is trusted
// again.
const steadyScrapes = 6

// Recent process start times remembered per target.
const startHistory = 8

// Continuity follows the engine process behind one target across scrapes.
// The zero value is ready; it is not safe for concurrent use.
type Continuity struct {
	starts       []float64          // distinct start times seen, oldest first
	before       *snapshot.Snapshot // the snapshot before a counter-only restart
	sinceRestart int
	flipping     bool
	steady       int
}

// Verdict is what Judge decided about one snapshot.
type Verdict struct {
	// Restart says why the snapshot is a new process whose counts are
	// all recent (Snapshot.Restarted is set).
	Restart string
	// Baseline says why the snapshot's counts are of unknown age
	// (Snapshot.Baseline is set).
	Baseline string
	// Flip is non-nil while the target's address reaches more than one
	// engine process: the snapshot must not be counted.
	Flip error
}

// Judge compares cur with prev, the previous snapshot of the same target
// (nil for the first), sets cur.Restarted or cur.Baseline and returns why.
func (c *Continuity) Judge(prev, cur *snapshot.Snapshot) Verdict {
	var v Verdict
	if cur == nil {
		return v
	}
	flip := ""
	if prev != nil {
		flip, v.Restart, v.Baseline = c.compare(prev, cur)
	}
	c.remember(cur.ProcessStart)
	switch {
	case flip != "":
		c.flipping, c.steady = true, 0
		c.before = nil
	case c.flipping && (v.Restart != "" || v.Baseline != ""):
		c.steady = 0
	case c.flipping:
		c.steady++
		if c.steady >= steadyScrapes {
			c.flipping = false
			v.Baseline = fmt.Sprintf("the target answered from one engine process for %d scrapes in a row; counting resumes from here", c.steady)
		}
	}
	if c.flipping {
		why := flip
		if why == "" {
			why = fmt.Sprintf("waiting for %d scrapes in a row from one process (%d so far)", steadyScrapes, c.steady)
		}
		v.Restart, v.Baseline = "", ""
		v.Flip = &ScrapeError{ReasonMultipleEngines, fmt.Errorf("the URL reaches more than one engine process (%s); check that it names one pod or process, not a load-balanced service", why)}
		return v
	}
	cur.Restarted = v.Restart != ""
	cur.Baseline = v.Baseline != ""
	return v
}

// compare returns a flip, restart or baseline reason for cur after prev.
func (c *Continuity) compare(prev, cur *snapshot.Snapshot) (flip, restart, baseline string) {
	if prev.ProcessStart != 0 && cur.ProcessStart != 0 && prev.ProcessStart != cur.ProcessStart {
		c.before = nil
		switch {
		case slices.Contains(c.starts, cur.ProcessStart):
			return fmt.Sprintf("its process start time went back to %.0f, seen earlier, from %.0f", cur.ProcessStart, prev.ProcessStart), "", ""
		case cur.ProcessStart < float64(prev.Time.Unix())-startTolerance:
			return "", "", fmt.Sprintf("another engine process answers (started at %.0f, before the previous scrape): its counts are of unknown age and only set the baseline", cur.ProcessStart)
		}
		return "", fmt.Sprintf("process start time changed from %.0f to %.0f", prev.ProcessStart, cur.ProcessStart), ""
	}
	if c.before != nil {
		c.sinceRestart++
		if c.sinceRestart <= flipLookback && continues(c.before, cur) {
			return "counters that all went down came straight back above their earlier values", "", ""
		}
		if c.sinceRestart >= flipLookback {
			c.before = nil
		}
	}
	if why := allDown(prev, cur); why != "" {
		c.before, c.sinceRestart = prev, 0
		return "", why, ""
	}
	return "", "", ""
}

func (c *Continuity) remember(start float64) {
	if start == 0 || slices.Contains(c.starts, start) {
		return
	}
	if len(c.starts) == startHistory {
		c.starts = slices.Delete(c.starts, 0, 1)
	}
	c.starts = append(c.starts, start)
}

// eachPair calls f with the value of every cumulative series (counters,
// finish reasons, histogram counts) present in both snapshots and nonzero
// in a, and describes it for messages.
func eachPair(a, b *snapshot.Snapshot, f func(what string, av, bv float64)) {
	for i := range b.Models {
		m := &b.Models[i]
		p := a.Model(m.Name)
		if p == nil {
			continue
		}
		for c := range snapshot.NumCounters {
			if p.Counters[c].OK && m.Counters[c].OK && p.Counters[c].V > 0 {
				f(fmt.Sprintf("model %q %s", m.Name, counterNames[c]), p.Counters[c].V, m.Counters[c].V)
			}
		}
		for reason, v := range m.Finished {
			if pv, ok := p.Finished[reason]; ok && pv > 0 {
				f(fmt.Sprintf("model %q finished requests (%s)", m.Name, reason), pv, v)
			}
		}
		for h := range snapshot.NumHists {
			if p.Hists[h] != nil && m.Hists[h] != nil && p.Hists[h].Count > 0 {
				f(fmt.Sprintf("model %q %s count", m.Name, m.HistSource[h]), p.Hists[h].Count, m.Hists[h].Count)
			}
		}
	}
}

var counterNames = [snapshot.NumCounters]string{
	snapshot.Preemptions:        "preemptions",
	snapshot.PromptTokens:       "prompt tokens",
	snapshot.GenerationTokens:   "generation tokens",
	snapshot.PrefixCacheQueries: "prefix cache queries",
	snapshot.PrefixCacheHits:    "prefix cache hits",
}

// allDown describes the restart when every cumulative series present in
// both snapshots went down, "" otherwise. One series going down on its own
// is a reset or a glitch of that series, judged by the goodput layer.
func allDown(prev, cur *snapshot.Snapshot) string {
	n, down := 0, 0
	example := ""
	eachPair(prev, cur, func(what string, pv, v float64) {
		n++
		if v < pv {
			down++
			if example == "" {
				example = fmt.Sprintf("%s from %g to %g", what, pv, v)
			}
		}
	})
	if n == 0 || down < n {
		return ""
	}
	return fmt.Sprintf("every counter went down (%d series; %s)", n, example)
}

// continues reports whether cur carries on from before: every series of
// before is present and at least as high in cur.
func continues(before, cur *snapshot.Snapshot) bool {
	n, ok := 0, true
	eachPair(before, cur, func(_ string, bv, v float64) {
		n++
		ok = ok && v >= bv
	})
	return n > 0 && ok
}

// MarkRestart judges cur against prev with no history (two captures of one
// target, as slo-report compares): it sets cur.Restarted or cur.Baseline
// and returns why, or "" when cur continues prev.
func MarkRestart(prev, cur *snapshot.Snapshot) string {
	var c Continuity
	c.remember(prevStart(prev))
	v := c.Judge(prev, cur)
	if v.Restart != "" {
		return v.Restart
	}
	return v.Baseline
}

func prevStart(s *snapshot.Snapshot) float64 {
	if s == nil {
		return 0
	}
	return s.ProcessStart
}
