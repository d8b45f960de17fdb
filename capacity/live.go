package capacity

import (
	"math"
	"slices"
	"time"
)

// LiveOptions tune the live knee estimator; zero fields take defaults.
type LiveOptions struct {
	// Window is how much traffic one observation adds up (default 60 s):
	// long enough that a window's goodput is a steady measurement.
	Window time.Duration
	// LevelRatio is the width of a load level: loads within this ratio of
	// each other are one level (default 1.05, 5 %).
	LevelRatio float64
	// MinWindows is how many windows a level needs before it counts
	// (default 2).
	MinWindows int
	// MaxLevels bounds the memory of one estimator (default 64 levels;
	// the least recently seen one goes first).
	MaxLevels int
	// Drop is how far below the knee's goodput a higher load level must
	// fall to count as past the knee, and how far below its own
	// throughput (goodput stopped tracking it) (default 0.05, 5 %).
	Drop float64
	// MinLoad is the load below which a window is idle and not a level
	// (default 0.05 req/s).
	MinLoad float64
	// MaxGap is how far above the last load that met the knee's goodput
	// the first failing load may lie for the knee to count as reached
	// (default 2: at most twice the load). Farther, the loads between
	// were never observed, and the knee is a lower bound: the engine may
	// have sustained any of them.
	MaxGap float64
}

func (o LiveOptions) withDefaults() LiveOptions {
	if o.Window <= 0 {
		o.Window = time.Minute
	}
	if !(o.LevelRatio > 1) {
		o.LevelRatio = 1.05
	}
	if o.MinWindows <= 0 {
		o.MinWindows = 2
	}
	if o.MaxLevels <= 0 {
		o.MaxLevels = 64
	}
	if !(o.Drop > 0 && o.Drop < 1) {
		o.Drop = 0.05
	}
	if !(o.MinLoad > 0) {
		o.MinLoad = 0.05
	}
	if !(o.MaxGap > 1) {
		o.MaxGap = 2
	}
	return o
}

// level is the running mean of the windows seen at one load level.
type level struct {
	idx             int
	windows         int
	load, thr, good float64
	last            time.Time
}

// maxWeight caps the windows a level's mean weighs, so that it follows a
// server that changed (an upgrade, a new flag) instead of its whole past.
const maxWeight = 32

func (l *level) add(load, thr, good float64, at time.Time) {
	l.windows++
	w := 1 / float64(min(l.windows, maxWeight))
	l.load += (load - l.load) * w
	l.thr += (thr - l.thr) * w
	l.good += (good - l.good) * w
	l.last = at
}

// Live estimates the knee of one model on one target from the traffic
// the daemon observes: each window's load (requests per second), output
// throughput and goodput (tokens per second) go into a load level; the
// knee is the level with the highest goodput, and it is a knee only once
// a higher load level has been seen whose goodput fell clearly below it.
// Until then the highest goodput seen is a lower bound on the knee.
// Memory is bounded by MaxLevels. Not safe for concurrent use.
type Live struct {
	o      LiveOptions
	levels []level // sorted by idx
	// the window being added up
	secs, reqs, tokens, good float64
	current                  float64 // load of the last closed window
	hasCurrent               bool
}

// NewLive returns an estimator.
func NewLive(o LiveOptions) *Live { return &Live{o: o.withDefaults()} }

// Add folds one interval in: seconds it lasted, requests that arrived (or
// finished, where arrivals are unknown), output tokens generated and
// those of requests that met the SLO. Intervals add up to windows; a
// window closes into its load level once it spans Window. Intervals with
// non-finite or negative values are skipped.
func (l *Live) Add(at time.Time, seconds, requests, tokens, goodTokens float64) {
	l.add(at, seconds, requests, tokens, goodTokens, nil)
}

// add is Add; windowGood, when not nil, gives the good tokens of the
// whole window as it closes (the token bounds drawn from the window's
// totals), which then replace the intervals' added up: each interval's
// bounds need not hold over the window.
func (l *Live) add(at time.Time, seconds, requests, tokens, goodTokens float64, windowGood func() (float64, bool)) {
	for _, v := range []float64{seconds, requests, tokens, goodTokens} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return
		}
	}
	if seconds == 0 {
		return
	}
	l.secs += seconds
	l.reqs += requests
	l.tokens += tokens
	l.good += min(goodTokens, tokens)
	if l.secs < l.o.Window.Seconds() {
		return
	}
	if windowGood != nil {
		if g, ok := windowGood(); ok && g >= 0 && !math.IsInf(g, 0) {
			l.good = min(g, l.tokens)
		}
	}
	load, thr, good := l.reqs/l.secs, l.tokens/l.secs, l.good/l.secs
	l.secs, l.reqs, l.tokens, l.good = 0, 0, 0, 0
	l.current, l.hasCurrent = load, true
	if load < l.o.MinLoad {
		return
	}
	idx := int(math.Floor(math.Log(load) / math.Log(l.o.LevelRatio)))
	i, found := slices.BinarySearchFunc(l.levels, idx, func(lv level, n int) int { return lv.idx - n })
	if !found {
		if len(l.levels) >= l.o.MaxLevels {
			oldest := 0
			for j := range l.levels {
				if l.levels[j].last.Before(l.levels[oldest].last) {
					oldest = j
				}
			}
			l.levels = slices.Delete(l.levels, oldest, oldest+1)
			i, _ = slices.BinarySearchFunc(l.levels, idx, func(lv level, n int) int { return lv.idx - n })
		}
		l.levels = slices.Insert(l.levels, i, level{idx: idx})
	}
	l.levels[i].add(load, thr, good, at)
}

// Estimate is the live knee of one model on one target.
type Estimate struct {
	// KneeLoad is the load at the knee (req/s); KneeGoodput its goodput
	// (output tok/s of requests meeting the SLO).
	KneeLoad, KneeGoodput float64
	// Reached is true when a load past the knee was observed just above
	// a passing one: a higher load level whose goodput fell more than
	// Drop below the knee's and below its own throughput, within MaxGap
	// of the last load that did not.
	// Otherwise the knee is a lower bound: goodput was still rising at
	// the highest load seen.
	Reached bool
	// Levels is how many distinct load levels have enough windows.
	Levels int
	// Load is the last window's load; Headroom is 1 − Load/KneeLoad (a
	// lower bound itself when the knee is one).
	Load, Headroom float64
}

// Estimate returns the knee, or false before any level has enough
// windows.
func (l *Live) Estimate() (Estimate, bool) {
	var e Estimate
	knee := -1
	for i := range l.levels {
		lv := &l.levels[i]
		if lv.windows < l.o.MinWindows {
			continue
		}
		e.Levels++
		if knee < 0 || lv.good > l.levels[knee].good {
			knee = i
		}
	}
	if knee < 0 || !l.hasCurrent {
		return e, false
	}
	k := &l.levels[knee]
	e.KneeLoad, e.KneeGoodput = k.load, k.good
	// The last load that still met the knee's goodput, within noise.
	passing := k.load
	for i := knee + 1; i < len(l.levels); i++ {
		lv := &l.levels[i]
		if lv.windows < l.o.MinWindows {
			continue
		}
		// past the knee goodput no longer tracks throughput: a level
		// whose goodput is below the knee's only by noise, while nearly
		// all its tokens are still good, is not evidence
		if !(lv.good < k.good*(1-l.o.Drop) && lv.good < lv.thr*(1-l.o.Drop)) {
			passing = lv.load
			continue
		}
		// The first failing load: it shows the knee only if it lies
		// just above a passing one. After a jump (1 to 10 req/s with
		// nothing between) the knee is anywhere in the gap, and the
		// highest load seen to pass is a lower bound.
		e.Reached = lv.load <= passing*l.o.MaxGap
		break
	}
	e.Load = l.current
	e.Headroom = 1 - e.Load/e.KneeLoad
	return e, true
}

// LevelCount is how many load levels the estimator holds (for tests of
// its bound).
func (l *Live) LevelCount() int { return len(l.levels) }
