package goodput

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Tracker accumulates SLO counters for one target from its consecutive
// snapshots. It is not safe for concurrent use.
//
// What a snapshot's cumulative values mean depends on what came before:
//   - The first snapshot a tracker sees is a baseline only: its counts
//     happened at unknown times before we looked, so they are not charged
//     to any interval. So is a snapshot marked Baseline (another engine
//     process answers, whose counts are of unknown age).
//   - A snapshot marked Restarted comes from a process that started since
//     the collector last looked, even a tracker's first: all its counts
//     are the increase.
//   - A model, or a series of a known model, that first appears in a later
//     snapshot of the same process was created by the engine since then
//     (engines create a series on its first observation): its counts are
//     the increase. The exception is a family that was present but
//     unusable until now (Model.HistFailed and friends): its counts are of
//     unknown age and only set its baseline.
//   - Otherwise each series is judged on its own (see delta.go): up is an
//     increase, down to at most half is a reset of that series, a smaller
//     decrease is a glitch that adds nothing, and a histogram whose bucket
//     bounds changed is reset alone. Such events are listed by
//     Discontinuities until the next Update.
//   - A model or series missing from one snapshot keeps its baseline, so
//     the next snapshot that has it measures from the last one that did.
type Tracker struct {
	target  string
	slos    []SLO
	forget  time.Duration // 0: keep absent models forever
	limit   int           // 0: no cap on the models kept
	started bool
	limits  Limits
	last    time.Time // the previous snapshot's time
	gen     uint64
	states  []ModelState // sorted by model name
	tracks  []*modelTrack
	events  []Discontinuity
}

// Discontinuity is a series of one model that did not simply continue in
// the last Update: it reset, glitched or changed its bucket layout.
type Discontinuity struct {
	Model string
	// Series names the contract signal: a histogram's engine family,
	// "generation_tokens" or "finished".
	Series string
	// Kind is one of DiscontinuityKinds.
	Kind string
}

// modelTrack holds the baselines of one model.
type modelTrack struct {
	gen      uint64    // last Update that listed the model
	seen     time.Time // snapshot time of that Update
	hists    [snapshot.NumHists]histTrack
	tokens   counterTrack
	finished finishedTrack
}

// NewTracker returns a tracker for the named target. slos should have
// passed ValidateSLOs; the tracker keeps the slice and does not modify it.
func NewTracker(target string, slos []SLO) *Tracker {
	return &Tracker{target: target, slos: slos, limits: DefaultLimits}
}

// SetLimits sets how much an engine counter may rise in one interval
// (DefaultLimits unless set).
func (t *Tracker) SetLimits(l Limits) { t.limits = l }

// ForgetAfter drops a model, its totals and its baselines once it has been
// absent from every snapshot for d (by snapshot time), so that a target
// whose models churn (LoRA adapters loaded and unloaded) does not keep
// every model it ever served. Its counters then disappear from the
// exposition; if it comes back it starts as a new model. 0 keeps models.
func (t *Tracker) ForgetAfter(d time.Duration) { t.forget = d }

// KeepAtMost caps the models kept, present or absent: when a snapshot
// brings more, the absent models seen longest ago are dropped first, so
// that models that churn faster than ForgetAfter (a new LoRA adapter every
// scrape) cannot grow the exposition past the target's model_limit. 0
// keeps every model (until ForgetAfter).
func (t *Tracker) KeepAtMost(n int) { t.limit = n }

// Target returns the target name the tracker was made for.
func (t *Tracker) Target() string { return t.target }

// Models returns the state of every model seen so far, sorted by name. The
// slice and everything in it belong to the tracker and change on the next
// Update or Reconfigure; copy what must outlive it.
func (t *Tracker) Models() []ModelState { return t.states }

// Model returns the state of the named model, or nil.
func (t *Tracker) Model(name string) *ModelState {
	if i, ok := t.find(name); ok {
		return &t.states[i]
	}
	return nil
}

// Discontinuities lists the series that reset, glitched, changed their
// bucket layout or whose layout keeps changing (left out of judging) in the
// last Update. The slice belongs to the tracker.
func (t *Tracker) Discontinuities() []Discontinuity { return t.events }

// Update folds the next snapshot of the target into the counters.
func (t *Tracker) Update(s *snapshot.Snapshot) error {
	if s == nil {
		return errors.New("goodput: nil snapshot")
	}
	if s.Target != t.target {
		return fmt.Errorf("goodput: snapshot of target %q given to the tracker of %q", s.Target, t.target)
	}
	running := t.started
	t.started = true
	t.gen++
	t.events = t.events[:0]
	md := mode{restarted: s.Restarted, baseline: s.Baseline || (!running && !s.Restarted),
		noReset: s.NoReset, now: s.Time, since: t.last, lim: t.limits}
	t.last = s.Time
	for i := range s.Models {
		m := &s.Models[i]
		idx, known := t.find(m.Name)
		if !known {
			idx = t.add(m.Name)
		}
		st, tr := &t.states[idx], t.tracks[idx]
		st.Present, tr.gen, tr.seen = true, t.gen, s.Time
		// Baselines advance even for models no SLO matches, so that a
		// reload that starts matching one measures from the last snapshot.
		t.advance(tr, m, md)
		for j := range st.SLOs {
			st.SLOs[j].observe(m, tr)
		}
	}
	keep := 0
	for i, tr := range t.tracks {
		if tr.gen != t.gen {
			t.states[i].clearInterval()
			if t.forget > 0 && s.Time.Sub(tr.seen) > t.forget {
				continue
			}
		}
		t.states[keep], t.tracks[keep] = t.states[i], tr
		keep++
	}
	clear(t.states[keep:])
	clear(t.tracks[keep:])
	t.states, t.tracks = t.states[:keep], t.tracks[:keep]
	if t.limit > 0 && len(t.states) > t.limit {
		t.evict(len(t.states) - t.limit)
	}
	return nil
}

// evict drops the n absent models seen longest ago (fewer if fewer are
// absent: present models are never dropped).
func (t *Tracker) evict(n int) {
	var absent []int
	for i, tr := range t.tracks {
		if tr.gen != t.gen {
			absent = append(absent, i)
		}
	}
	slices.SortStableFunc(absent, func(a, b int) int { return t.tracks[a].seen.Compare(t.tracks[b].seen) })
	drop := make(map[int]bool, n)
	for _, i := range absent[:min(n, len(absent))] {
		drop[i] = true
	}
	keep := 0
	for i := range t.states {
		if drop[i] {
			continue
		}
		t.states[keep], t.tracks[keep] = t.states[i], t.tracks[i]
		keep++
	}
	clear(t.states[keep:])
	clear(t.tracks[keep:])
	t.states, t.tracks = t.states[:keep], t.tracks[:keep]
}

func (t *Tracker) find(name string) (int, bool) {
	return slices.BinarySearchFunc(t.states, name, func(m ModelState, n string) int {
		return strings.Compare(m.Model, n)
	})
}

// add inserts a model and the SLOs that match it, keeping names sorted.
func (t *Tracker) add(name string) int {
	st := ModelState{Model: name, SLOs: t.match(name)}
	i, _ := t.find(name)
	t.states = slices.Insert(t.states, i, st)
	t.tracks = slices.Insert(t.tracks, i, &modelTrack{})
	return i
}

// match returns fresh states for the SLOs that apply to the model.
func (t *Tracker) match(model string) []SLOState {
	var out []SLOState
	for _, slo := range t.slos {
		if !slo.Match.Matches(t.target, model) {
			continue
		}
		ss := SLOState{SLO: slo.Name, Objectives: make([]ObjectiveState, len(slo.Objectives))}
		for k, o := range slo.Objectives {
			ss.Objectives[k].Objective = o
		}
		out = append(out, ss)
	}
	return out
}

// advance moves the baselines of one model on. A series the model never
// had before counts from zero unless the whole snapshot is a baseline.
func (t *Tracker) advance(tr *modelTrack, m *snapshot.Model, md mode) {
	note := func(series string, ev event) {
		if ev != eventNone {
			t.events = append(t.events, Discontinuity{Model: m.Name, Series: series, Kind: ev.kind()})
		}
	}
	for h := range tr.hists {
		ht := &tr.hists[h]
		ht.perToken = h == int(snapshot.ITL)
		if !ht.seen && m.HistFailed[h] {
			ht.failed = true
		}
		note(histName(m, snapshot.Hist(h)), ht.advance(m.Hists[h], md))
		if ht.unstable && m.Hists[h] != nil {
			// Counted once per snapshot left out of judging.
			t.events = append(t.events, Discontinuity{Model: m.Name, Series: histName(m, snapshot.Hist(h)), Kind: DiscontinuityLayoutUnstable})
		}
	}
	if !tr.tokens.seen && m.CounterFailed[snapshot.GenerationTokens] {
		tr.tokens.failed = true
	}
	note("generation_tokens", tr.tokens.advance(m.Counters[snapshot.GenerationTokens], md))
	if tr.finished.base == nil && m.FinishedFailed {
		tr.finished.failed = true
	}
	note("finished", tr.finished.advance(m.Finished, md))
}

// histNames name the contract histograms where the engine's family is not
// known.
var histNames = [snapshot.NumHists]string{
	snapshot.TTFT:         "time_to_first_token",
	snapshot.ITL:          "inter_token_latency",
	snapshot.TPOT:         "request_time_per_output_token",
	snapshot.E2E:          "e2e_request_latency",
	snapshot.QueueTime:    "request_queue_time",
	snapshot.OutputTokens: "request_generation_tokens",
}

func histName(m *snapshot.Model, h snapshot.Hist) string {
	if s := m.HistSource[h]; s != "" {
		return s
	}
	return histNames[h]
}

// requests returns the count of requests finished in the interval, from
// the source requestSource picked.
func (tr *modelTrack) requests(source string) float64 {
	var h *histTrack
	switch source {
	case RequestsFromFinished:
		return tr.finished.total // zero when not ok
	case RequestsFromE2E:
		h = &tr.hists[snapshot.E2E]
	case RequestsFromTTFT:
		h = &tr.hists[snapshot.TTFT]
	case RequestsFromTPOT:
		h = &tr.hists[snapshot.TPOT]
	case RequestsFromQueue:
		h = &tr.hists[snapshot.QueueTime]
	default:
		return 0
	}
	if !h.ok {
		return 0
	}
	return h.dcount
}

func (st *ModelState) clearInterval() {
	st.Present = false
	for i := range st.SLOs {
		s := &st.SLOs[i]
		for j := range s.Objectives {
			s.Objectives[j].Interval, s.Objectives[j].TokenInterval = Counts{}, Counts{}
		}
		s.Joint.Interval = JointInterval{}
	}
}
