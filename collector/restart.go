package collector

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// How a target's consecutive snapshots relate is decided here, once per
// scrape, before anything is counted. A restart needs two witnesses: where
// the engine publishes its process start time, the start time changed and
// the counters fell; where it does not, every counter fell to what a
// fresh start explains.
//
//   - continuation: the same process; each series is judged on its own by
//     the goodput layer (a series that went down has glitched or reset,
//     the others continue), as Prometheus' rate() does. Where the start
//     time is unchanged (within startWobble seconds), or every counter fell
//     by less than a fresh start explains, no series can have started
//     again (Snapshot.NoReset): a fall is a glitch of that series, never a
//     reset whose new value would be added.
//   - restart (Snapshot.Restarted): a new process that started after the
//     previous scrape: a new process start time and every counter down,
//     or, for engines that publish none, every counter down to at most
//     half of what it was. Its counts all happened since the previous
//     scrape: they are the increase.
//   - baseline (Snapshot.Baseline): another process answers whose counts
//     are of unknown age: it started before the previous scrape, the
//     engine behind the address changed, or its start time changed while
//     its counters kept rising. Its counts only set baselines.
//   - flipping: the address reaches more than one engine process (a load
//     balancer in front of replicas): a start time seen earlier comes back,
//     counters that all went down as in a restart climb straight back to
//     where they were, or (no start time) counters that all fell come back
//     above where they were for the second time within altWindow scrapes.
//     A single such return is a glitch that ended; when it comes after the
//     goodput layer took the lower values as baselines (rebaseAfter
//     scrapes), it is a baseline. Nothing from
//     such a target can be counted; it is an error (ReasonMultipleEngines)
//     until it answers from one process for steadyScrapes scrapes in a
//     row, and then counting resumes from a baseline.
//
// A start time is Unix seconds when it is plausible as such (after 2000
// and not in the future); otherwise it is an opaque process token (llama-
// server sends microseconds of the monotonic clock since boot in its
// Process-Start-Time-Unix header), compared for equality only.

// Process start times are the engine's clock, scrape times ours; a new
// process whose start time is within this much before our previous scrape
// is taken to have started after it.
const startTolerance = 2.0 // seconds

// Start times (Unix seconds) that differ by at most this much name the same
// process: the process collectors derive them from clock ticks since boot
// and the boot time, and the rounding makes them wobble by up to a second
// from one scrape to the next.
const startWobble = 2.0 // seconds

// After a fall of every counter, this many scrapes are compared with the
// snapshot before it, to tell a restart or a glitch from an alternation.
const flipLookback = 3

// Two returns of counters that all fell, within this many scrapes, are an
// address alternating between processes; a single one is a glitch. A fall
// that is no restart is followed for this many scrapes.
const altWindow = 20

// The goodput layer keeps a series' higher baseline through this many
// snapshots below it (its glitchRebase), then takes the lower value. A
// return above the values before a fall that came later finds the lower
// baselines, so its rise is no increase of this interval: it only sets
// the baselines.
const rebaseAfter = 3

// Scrapes in a row from one process before a flipping target is trusted
// again.
const steadyScrapes = 6

// Recent process start times remembered per target.
const startHistory = 8

// Continuity follows the engine process behind one target across scrapes.
// The zero value is ready; it is not safe for concurrent use.
type Continuity struct {
	starts       []start            // distinct start times seen, oldest first
	before       *snapshot.Snapshot // the snapshot before a fall of every counter
	fresh        bool               // that fall looked like a fresh start
	sinceRestart int
	scrapes      int // snapshots judged
	lastAlt      int // scrapes at the last return above a fall; 0: none
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
// (nil for the first), sets cur.Restarted, cur.Baseline or cur.NoReset and
// returns why.
func (c *Continuity) Judge(prev, cur *snapshot.Snapshot) Verdict {
	var v Verdict
	if cur == nil {
		return v
	}
	c.scrapes++
	flip, noReset := "", false
	if prev != nil {
		flip, v.Restart, v.Baseline, noReset = c.compare(prev, cur)
	}
	c.remember(startOf(cur))
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
	cur.NoReset = noReset && !cur.Restarted && !cur.Baseline
	return v
}

// compare returns a flip, restart or baseline reason for cur after prev,
// and whether no series of cur can have started again.
func (c *Continuity) compare(prev, cur *snapshot.Snapshot) (flip, restart, baseline string, noReset bool) {
	ps, cs := startOf(prev), startOf(cur)
	timed := ps.v != 0 && cs.v != 0
	if timed && !ps.same(cs) {
		c.before = nil
		if c.seen(cs) {
			return fmt.Sprintf("its process start time went back to %s, seen earlier, from %s", cs, ps), "", "", false
		}
		if cs.unix && cs.v < float64(prev.Time.UnixNano())/1e9-startTolerance {
			return "", "", fmt.Sprintf("another engine process answers (started at %s, before the previous scrape): its counts are of unknown age and only set the baseline", cs), false
		}
		if why := allFell(prev, cur); why != "" {
			return "", fmt.Sprintf("process start time changed from %s to %s and %s", ps, cs, why), "", false
		}
		return "", "", fmt.Sprintf("the process start time changed from %s to %s but the counters did not fall: another process whose counts are of unknown age; they only set the baseline", ps, cs), false
	}
	if c.before != nil {
		c.sinceRestart++
		window := altWindow
		if c.fresh {
			window = flipLookback
		}
		switch {
		case c.sinceRestart <= window && continues(c.before, cur):
			fresh, since := c.fresh, c.sinceRestart
			c.before = nil
			if fresh {
				return "counters that all went down came straight back above their earlier values", "", "", false
			}
			if !timed {
				alt := c.lastAlt != 0 && c.scrapes-c.lastAlt <= altWindow
				c.lastAlt = c.scrapes
				if alt {
					return fmt.Sprintf("counters that all fell came back above their earlier values twice within %d scrapes", altWindow), "", "", false
				}
			}
			if since >= rebaseAfter {
				return "", "", fmt.Sprintf("every counter came back above where it was before it fell %d scrapes ago, when the lower values had become the baselines: the return only sets the baseline", since), false
			}
			return "", "", "", true
		case c.sinceRestart >= window:
			c.before = nil
		}
	}
	why, fresh := allDown(prev, cur)
	switch {
	case timed:
		// The same process: a fall is a glitch, whatever its size.
		if why != "" && c.before == nil {
			c.before, c.fresh, c.sinceRestart = prev, false, 0
		}
		return "", "", "", true
	case why == "":
	case fresh:
		c.before, c.fresh, c.sinceRestart = prev, true, 0
		return "", why, "", false
	default:
		// Every counter fell, but not to a fresh start: a glitch of the
		// whole body (one rank of several missing), or another process.
		if c.before == nil {
			c.before, c.fresh, c.sinceRestart = prev, false, 0
		}
		return "", "", "", true
	}
	// While counters that fell (no restart) have not come back, a series
	// still below its baseline glitched: it did not start again.
	return "", "", "", c.before != nil && !c.fresh
}

// start is a process start time: Unix seconds when the engine says so
// and the value is plausible as such (after 2000 and not after the scrape,
// give or take a day of clock skew), otherwise an opaque process token.
type start struct {
	v    float64
	unix bool
}

func startOf(s *snapshot.Snapshot) start {
	if s == nil {
		return start{}
	}
	now := s.Time
	if now.IsZero() {
		now = time.Now()
	}
	return start{s.ProcessStart, !s.ProcessToken && s.ProcessStart >= 946684800 && s.ProcessStart <= float64(now.Unix())+86400}
}

// same reports whether two start times name one process: equal, or Unix
// seconds within startWobble of each other.
func (a start) same(b start) bool {
	return a.v == b.v || a.unix && b.unix && math.Abs(a.v-b.v) <= startWobble
}

func (a start) String() string {
	if a.unix {
		return fmt.Sprintf("%.0f", a.v)
	}
	return fmt.Sprintf("process token %.0f", a.v)
}

// seen reports whether st names a process seen earlier.
func (c *Continuity) seen(st start) bool {
	return slices.ContainsFunc(c.starts, st.same)
}

func (c *Continuity) remember(st start) {
	if st.v == 0 || c.seen(st) {
		return
	}
	if len(c.starts) == startHistory {
		c.starts = slices.Delete(c.starts, 0, 1)
	}
	c.starts = append(c.starts, st)
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
	snapshot.EngineSteps:        "engine steps",
}

// allDown describes a fall of every cumulative series present in both
// snapshots, "" otherwise, and says whether it looks like a fresh start:
// every series down to at most half of what it was (a restarted engine
// has counted one interval at most; a rank missing from a multi-rank body
// or every value times 0.9 has not). One series going down on its own is
// a reset or a glitch of that series, judged by the goodput layer.
func allDown(prev, cur *snapshot.Snapshot) (string, bool) {
	n, down, fresh := 0, 0, 0
	example := ""
	eachPair(prev, cur, func(what string, pv, v float64) {
		n++
		if v < pv {
			down++
			if v <= pv/2 {
				fresh++
			}
			if example == "" {
				example = fmt.Sprintf("%s from %g to %g", what, pv, v)
			}
		}
	})
	if n == 0 || down < n {
		return "", false
	}
	return fmt.Sprintf("every counter went down (%d series; %s)", n, example), fresh == n
}

// allFell describes how the counters fell when a new process start time
// is its second witness: every cumulative series present in both went
// down, or the previous process had counted nothing. "" otherwise.
func allFell(prev, cur *snapshot.Snapshot) string {
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
	switch {
	case n == 0:
		return "the previous process had counted nothing"
	case down < n:
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
	c.remember(startOf(prev))
	v := c.Judge(prev, cur)
	if v.Restart != "" {
		return v.Restart
	}
	return v.Baseline
}
