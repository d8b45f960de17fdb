package diagnosis

import (
	"slices"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector/gpu"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// ModeState is one mode's verdict after a judgement.
type ModeState struct {
	// Supported is false when the target's engine or GPU backend lacks a
	// signal the rule needs; Missing names those signals. An unsupported
	// mode is never raised and never reported as clear.
	Supported bool
	Missing   []string
	// Matching is the rule's answer for this window (after precedence);
	// Raised the answer after hysteresis: what llm_failure_mode says.
	Matching, Raised bool
	// MaskedBy is the mode that explains this one, when it matched but
	// another took precedence.
	MaskedBy Mode
	Masked   bool
	// Since is when the mode was last raised.
	Since time.Time
	// Evidence is the rule in words with the values that decided it.
	Evidence string
}

// Verdict is the latest judgement of one target.
type Verdict struct {
	At time.Time
	// Ready is false until the window is covered by history; no mode is
	// raised before, but queue_growth (see Early).
	Ready bool
	// Early is set while the daemon is not Ready yet but its history
	// covers half a window: queue_growth, which compares with no
	// baseline, is judged from then on, so that an overload under way
	// when the daemon starts is named within two windows of its start.
	Early    bool
	Window   Signals
	Baseline Signals
	// QueueSlopeBar and QueueWaitingBar are the bars queue_growth judged
	// the window's queue against: the growth in requests per second and
	// the mean queue from which it counts as growing (the fixed
	// thresholds, or scaled by the requests served or the running
	// batch). Absent without a waiting gauge.
	QueueSlopeBar, QueueWaitingBar Value
	Modes                          [NumModes]ModeState
}

// Raised lists the raised modes.
func (v *Verdict) Raised() []Mode {
	var out []Mode
	for m := range NumModes {
		if v.Modes[m].Raised {
			out = append(out, m)
		}
	}
	return out
}

// Diagnoser keeps one target's history and judges it once per cycle. It
// is not safe for concurrent use; the exporter holds the target's lock.
type Diagnoser struct {
	set  Settings
	obj  Objectives
	prev *snapshot.Snapshot
	hist []sample
	run  [NumModes]struct {
		hits, clean int
		raised      bool
		since       time.Time
		// from is when the current run of matching judgements began.
		from time.Time
	}
	verdict Verdict
	// frozen are the spans of history, before the window, whose samples
	// were dropped as episode samples: the baseline reaches back past
	// them, so that it keeps Baseline of history outside any episode.
	frozen []span
	// born is when the history began (the first sample after none);
	// based is set once a baseline sample has been kept since.
	born  time.Time
	based bool
	// stir is when the queue began to grow past the fixed bars without
	// a break (zero when it does not): see queueStirring.
	stir time.Time
	// bounds interns histogram layouts: every scrape parses its own copy,
	// and the samples of the baseline would otherwise each keep one.
	bounds [snapshot.NumHists][]float64
}

// New returns a Diagnoser; invalid settings are replaced by the defaults
// (the configuration layer validates them with line numbers first).
func New(s Settings) *Diagnoser {
	if s.Validate() != nil {
		s = DefaultSettings()
	}
	d := &Diagnoser{set: s}
	d.obj = ObjectivesFor("", nil, s.Thresholds)
	return d
}

// Settings returns the settings in force.
func (d *Diagnoser) Settings() Settings { return d.set }

// Reconfigure changes the settings, keeping the history.
func (d *Diagnoser) Reconfigure(s Settings) {
	if s.Validate() != nil {
		return
	}
	d.set = s
}

// SetObjectives sets the latency objectives decode_saturation judges
// (ObjectivesFor the target's SLOs).
func (d *Diagnoser) SetObjectives(o Objectives) { d.obj = o }

// Verdict returns the latest judgement.
func (d *Diagnoser) Verdict() Verdict { return d.verdict }

// Observe folds in one collection cycle and judges the window. snap is
// nil when the scrape failed. gpus are the readings of the GPUs
// attributed to the target this cycle; gpuKnown is false when the daemon
// has no GPU backend or attributes no GPU to the target, which makes
// gpu_throttling unsupported.
func (d *Diagnoser) Observe(now time.Time, snap *snapshot.Snapshot, gpus []gpu.Device, gpuKnown bool) Verdict {
	var s sample
	if snap == nil {
		s = sample{t: now}
	} else {
		s = newSample(now, d.prev, snap, gpus)
		d.prev = snap
		for h, hd := range s.hists {
			if hd == nil {
				continue
			}
			if !slices.Equal(d.bounds[h], hd.bounds) {
				d.bounds[h] = append([]float64(nil), hd.bounds...)
			}
			hd.bounds = d.bounds[h]
		}
	}
	if !gpuKnown {
		s.gpu = gpuSample{}
	}
	if len(d.hist) == 0 {
		d.born, d.based = now, false
	}
	d.hist = append(d.hist, s)
	d.prune(now)
	d.judge(now, snap)
	return d.verdict
}

// MaxFrozenBaselines bounds how long the baseline stays frozen through
// one episode, in baselines (3 hours at the default 30 minutes).
const MaxFrozenBaselines = 6

// span is a stretch of history, from one sample's time to a later one's.
type span struct{ from, to time.Time }

// prune drops the episode samples that left the window (recording the
// time they covered in d.frozen), the samples older than the baseline
// and the window together plus the frozen time after them, and the
// bucket counts of samples older than the window.
func (d *Diagnoser) prune(now time.Time) {
	old := now.Add(-d.set.Window)
	// The frozen time is capped at MaxFrozenBaselines baselines: an
	// episode longer than that is a new normal (a lasting change of the
	// traffic), and its samples enter the baseline again, so that a mode
	// that compares with the baseline clears within about one baseline
	// more instead of staying raised for ever.
	var frozenTotal time.Duration
	for _, f := range d.frozen {
		frozenTotal += f.to.Sub(f.from)
	}
	maxFrozen := MaxFrozenBaselines * d.set.Baseline
	kept := d.hist[:0]
	for k := range d.hist {
		s := d.hist[k]
		if s.episode && !s.t.After(old) && frozenTotal < maxFrozen {
			from := s.t
			if len(kept) > 0 {
				from = kept[len(kept)-1].t
			}
			if n := len(d.frozen); n > 0 && !d.frozen[n-1].to.Before(from) {
				frozenTotal += s.t.Sub(d.frozen[n-1].to)
				d.frozen[n-1].to = s.t
			} else {
				frozenTotal += s.t.Sub(from)
				d.frozen = append(d.frozen, span{from, s.t})
			}
			continue
		}
		kept = append(kept, s)
	}
	clear(d.hist[len(kept):])
	d.hist = kept
	// A sample stays while it is within Window+Baseline of now, the
	// frozen time after it not counted.
	var frozen time.Duration
	for _, f := range d.frozen {
		frozen += f.to.Sub(f.from)
	}
	i, j := 0, 0
	for i < len(d.hist) {
		for j < len(d.frozen) && d.frozen[j].from.Before(d.hist[i].t) {
			frozen -= d.frozen[j].to.Sub(d.frozen[j].from)
			j++
		}
		if !d.hist[i].t.Before(now.Add(-(d.set.Window + d.set.Baseline + frozen))) {
			break
		}
		i++
	}
	if i > 0 {
		d.hist = append(d.hist[:0], d.hist[i:]...)
	}
	// Frozen spans before the oldest sample no longer extend anything.
	if len(d.hist) > 0 {
		k := 0
		for k < len(d.frozen) && d.frozen[k].to.Before(d.hist[0].t) {
			k++
		}
		d.frozen = append(d.frozen[:0], d.frozen[k:]...)
	} else {
		d.frozen = d.frozen[:0]
	}
	for k := range d.hist {
		if !d.hist[k].t.After(old) {
			for h := range d.hist[k].hists {
				if hd := d.hist[k].hists[h]; hd != nil {
					hd.cumulative = nil
				}
			}
		}
	}
}

// split returns the samples of the window (t in (now−window, now]) and of
// the baseline (the span before it).
func (d *Diagnoser) split(now time.Time) (win, base []sample) {
	from := now.Add(-d.set.Window)
	i := len(d.hist)
	for i > 0 && d.hist[i-1].t.After(from) {
		i--
	}
	return d.hist[i:], d.hist[:i]
}

func (d *Diagnoser) judge(now time.Time, snap *snapshot.Snapshot) {
	win, base := d.split(now)
	ceiling := Value{}
	for i := range d.hist {
		if r := d.hist[i].running; r.OK && (!ceiling.OK || r.V > ceiling.V) {
			ceiling = some(r.V)
		}
	}
	v := Verdict{At: now}
	v.Window = compute(win, ceiling, d.obj)
	v.Baseline = compute(base, ceiling, d.obj)
	if v.Window.Waiting.OK {
		slope, least := queueBars(&v.Window, &d.set.Thresholds)
		v.QueueSlopeBar, v.QueueWaitingBar = some(slope), some(least)
	}
	// The window is judged once history covers it: a sample at least one
	// window old exists.
	// The window is covered once a sample older than it is kept, or
	// episode samples left it (frozen), or, where the history has been
	// one episode since it began (a daemon started during an overload:
	// no sample ever entered the baseline), once it began a window ago.
	d.based = d.based || len(base) > 0
	v.Ready = v.Window.Cycles >= 2 && (len(base) > 0 || len(d.frozen) > 0 || !d.based && !now.Before(d.born.Add(d.set.Window)))
	v.Early = !v.Ready && v.Window.Cycles >= 2 && v.Window.Span >= d.set.Window/2
	// The baseline is ready once its samples cover half a window: the
	// time they measured, not the time between the first and the last
	// (an episode's samples never enter it, so an episode in the first
	// window leaves a few samples of start-up on either side of a gap).
	baseReady := len(base) >= 2 && v.Baseline.Span >= d.set.Window/2
	sup := support(snap, d.prev, v.Window)
	var raw [NumModes]bool
	var why [NumModes]string
	for m := range NumModes {
		judged := v.Ready || v.Early && m == QueueGrowth
		if !judged || len(sup[m]) > 0 {
			continue
		}
		raw[m], why[m] = rules[m](&v.Window, &v.Baseline, baseReady, d.run[m].raised, &d.set.Thresholds, &d.obj)
		// A queue that has begun to match and pauses during the sustain
		// is held as a raised one is while it stands long enough to
		// break TTFT by itself (queuePaused): an overload's queue
		// pauses, a surge at the knee holds too few requests to.
		if m == QueueGrowth && !raw[m] && !d.run[m].raised && d.run[m].hits > 0 && queuePaused(&v.Window, &d.set.Thresholds, &d.obj) {
			raw[m], why[m] = rules[m](&v.Window, &v.Baseline, baseReady, true, &d.set.Thresholds, &d.obj)
		}
	}
	// The baseline is what the target looks like outside an episode: the
	// samples of a window in which any mode matches, and of every window
	// while one is raised, never enter it. So a long incident does not
	// become its own baseline and clear the modes that compare with it.
	episode := false
	for m := range NumModes {
		episode = episode || raw[m] || d.run[m].raised
	}
	if episode {
		for i := range win {
			win[i].episode = true
		}
	}
	// The sustain of a queue judged against bars scaled by its batch
	// counts from when it began to grow past the fixed bars (stirring).
	if v.Ready || v.Early {
		if queueStirring(&v.Window, &d.set.Thresholds) {
			if d.stir.IsZero() {
				d.stir = now
			}
		} else {
			d.stir = time.Time{}
		}
	}
	// Precedence on the raw answers: a mode explained by another that
	// matches or is raised does not count as matching.
	var eff [NumModes]bool
	var maskedBy [NumModes]Mode
	var masked [NumModes]bool
	// A stopped engine is the root cause of whatever it leaves behind (a
	// queue that grows behind it, a hung batch at its ceiling): from
	// StallSuspect of silence, before engine_stall itself can decide, no
	// other mode counts as matching; its evidence stays.
	suspect := len(sup[EngineStall]) == 0 && stopped(&v.Window, d.set.Thresholds.StallSuspect)
	for m := range NumModes {
		eff[m] = raw[m]
		if suspect && m != EngineStall && raw[m] {
			eff[m], masked[m], maskedBy[m] = false, true, EngineStall
			continue
		}
		for k := range NumModes {
			if k != m && (raw[k] || d.run[k].raised) && masks(k, m) && raw[m] {
				eff[m], masked[m], maskedBy[m] = false, true, k
				break
			}
		}
	}
	for m := range NumModes {
		r := &d.run[m]
		switch {
		case len(sup[m]) > 0:
			r.hits, r.clean, r.raised = 0, 0, false
		case eff[m]:
			if r.hits == 0 {
				r.from = now
				if m == QueueGrowth && !d.stir.IsZero() {
					r.from = d.stir
				}
			}
			r.hits++
			r.clean = 0
			// A queue must also outlast a surge (QueueSustain): at the
			// knee a healthy queue grows for a few tens of seconds, then
			// drains.
			sustained := m != QueueGrowth || now.Sub(r.from) >= d.set.Thresholds.Sustain()
			if !r.raised && r.hits >= d.set.Enter && sustained {
				r.raised, r.since = true, now
			}
		default:
			r.clean++
			// A queue's run of matches survives fewer than Leave clean
			// judgements, as a raised mode does: an overload's queue
			// pauses for a scrape or two (clients that time out, a
			// batch of short requests), and a pause is no drain.
			if m != QueueGrowth || r.clean >= d.set.Leave {
				r.hits = 0
			}
			if r.raised && r.clean >= d.set.Leave {
				r.raised = false
			}
		}
	}
	for m := range NumModes {
		st := ModeState{Supported: len(sup[m]) == 0, Missing: sup[m], Matching: eff[m], Evidence: why[m],
			Masked: masked[m], MaskedBy: maskedBy[m], Since: d.run[m].since}
		st.Raised = d.run[m].raised
		// A raised mode is hidden while one that explains it is raised
		// or matches, or while the engine is silent.
		if st.Raised && m != EngineStall && suspect {
			st.Raised, st.Masked, st.MaskedBy = false, true, EngineStall
		}
		for k := range NumModes {
			if k != m && st.Raised && (d.run[k].raised || eff[k]) && masks(k, m) {
				st.Raised, st.Masked, st.MaskedBy = false, true, k
				break
			}
		}
		v.Modes[m] = st
	}
	d.verdict = v
}
