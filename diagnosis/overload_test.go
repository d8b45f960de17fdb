package diagnosis

import (
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// overloaded builds the snapshots of an engine whose batch sits at 128
// while its queue grows: waiting(t) requests at t seconds, 100 requests
// a cycle (20 a second) admitted with a TTFT of 2 s and finished, unless
// noRate (an engine that counts no requests, as llama.cpp: no TTFT
// histogram, no finish reasons). Tokens come out every cycle.
type overloaded struct {
	waiting func(t float64) float64
	noRate  bool
	// kv, when set, is the KV cache's usage; preempt, when set, the
	// preemptions a cycle (a counter the engine exposes).
	kv, preempt *float64
	preempted   float64
	gen         float64
	fin         float64
	ttft        *snapshot.Histogram
}

func newOverloaded(waiting func(float64) float64, noRate bool) *overloaded {
	return &overloaded{waiting: waiting, noRate: noRate,
		ttft: &snapshot.Histogram{Bounds: []float64{0.1, 0.5, 1, 2.5}, Cumulative: make([]float64, 4)}}
}

func (o *overloaded) snap(i int) (time.Time, *snapshot.Snapshot) {
	at := t0.Add(time.Duration(i) * 5 * time.Second)
	o.gen += 2500
	o.fin += 100
	observe(o.ttft, 2, 100)
	m := snapshot.Model{Name: "m"}
	m.Gauges[snapshot.Running] = snapshot.Value{V: 128, OK: true}
	m.Gauges[snapshot.Waiting] = snapshot.Value{V: o.waiting(5 * float64(i)), OK: true}
	m.Counters[snapshot.GenerationTokens] = snapshot.Value{V: o.gen, OK: true}
	if o.kv != nil {
		m.Gauges[snapshot.KVCacheUsage] = snapshot.Value{V: *o.kv, OK: true}
	}
	if o.preempt != nil {
		o.preempted += *o.preempt
		m.Counters[snapshot.Preemptions] = snapshot.Value{V: o.preempted, OK: true}
	}
	kind := snapshot.VLLM
	if o.noRate {
		kind = snapshot.LlamaCPP
	} else {
		m.Finished = map[string]float64{"stop": o.fin}
		m.Hists[snapshot.TTFT] = o.ttft.Clone()
	}
	return at, &snapshot.Snapshot{Target: "t", Engine: kind, Time: at, Models: []snapshot.Model{m}}
}

// firstRaised feeds n cycles of o to a new Diagnoser with the default
// settings and returns when queue_growth was first raised (from the
// first cycle; -1 if never), failing on any other mode.
func firstRaised(t *testing.T, o *overloaded, n int) time.Duration {
	t.Helper()
	d := New(DefaultSettings())
	for i := range n {
		at, s := o.snap(i)
		v := d.Observe(at, s, nil, false)
		for _, m := range v.Raised() {
			if m != QueueGrowth {
				t.Fatalf("%v raised at %v: %s", m, at.Sub(t0), v.Modes[m].Evidence)
			}
		}
		if v.Modes[QueueGrowth].Raised {
			return at.Sub(t0)
		}
	}
	return -1
}

// A daemon that starts while an overload is under way names it within
// two windows of its start: queue_growth, which compares with no
// baseline, is judged from half a window of history. Judged only once a
// window is covered, the earliest raise is one window, a cycle and the
// sustain (40 s) after the start: 1m45s.
func TestOverloadUnderWayAtStart(t *testing.T) {
	o := newOverloaded(func(t float64) float64 { return 2 * t }, false)
	at := firstRaised(t, o, 40)
	if at < 0 || at > 90*time.Second {
		t.Fatalf("queue_growth raised at %v after the start, want within 1m30s", at)
	}
}

// Where the engine counts no requests the queue's bar is a quarter of
// the batch (32 of 128): a queue growing by 0.6 a second from the start
// (the slower model at 1.25 times its knee) reaches it, by its mean over
// a minute, after 1m47s, and then waited for the sustain. The queue over
// the window's last quarter stands in for the mean (1m1s), and the
// sustain counts from when the queue grew past a third of the bar
// (queueStirring, 36 s): named at 1m20s; with the mean alone at 1m30s,
// without the stirring at 1m40s.
func TestBatchScaledQueueNamedInTime(t *testing.T) {
	o := newOverloaded(func(t float64) float64 { return 0.6 * t }, true)
	at := firstRaised(t, o, 40)
	if at < 0 || at > 80*time.Second {
		t.Fatalf("queue_growth raised at %v after the start, want within 1m20s", at)
	}
	// A queue that stirs past the fixed bars and stands under the
	// batch's bar is never named.
	o = newOverloaded(func(t float64) float64 { return min(t, 20) }, true)
	if at := firstRaised(t, o, 60); at >= 0 {
		t.Fatalf("a queue of 20 beside a batch of 128 raised queue_growth at %v", at)
	}
}

// A queue that began to match and pauses during the sustain is held as a
// raised one would be while its wait at the rate served is at least
// QueuePauseWaits TTFT objectives; a short queue's pause starts the
// count again. The rule is scripted: it matches as growing for four
// judgements, then only when held.
func TestQueuePauseHoldsTheSustain(t *testing.T) {
	saved := rules
	t.Cleanup(func() { rules = saved })
	k := new(int)
	for m := range NumModes {
		rules[m] = func(_, _ *Signals, _, held bool, _ *Thresholds, _ *Objectives) (bool, string) {
			return m == QueueGrowth && *k >= 0 && (*k < 4 || held), "scripted"
		}
	}
	for _, tc := range []struct {
		name    string
		waiting float64 // beside 10 requests a cycle: 2 a second
		want    int     // the judgement first raised; -1: none
	}{
		{"a standing queue of 80 (40 s of waiting)", 80, 8},
		{"a queue of 1 (0.5 s of waiting)", 1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, e := New(settings()), newEngine()
			*k = -1
			run(d, e, 0, 13, func(int) { e.healthy() })
			got := -1
			for j := range 20 {
				*k = j
				vs := run(d, e, 13+j, 1, func(int) { e.healthy(); e.waiting = tc.waiting })
				if vs[0].Modes[QueueGrowth].Raised && got < 0 {
					got = j
				}
			}
			if got != tc.want {
				t.Fatalf("queue_growth first raised at judgement %d, want %d", got, tc.want)
			}
		})
	}
}

// A daemon whose history has been one episode since it started (an
// overload under way at its start: no sample ever enters the baseline)
// is ready once its history is a window old, so that its other modes are
// judged too; the llama.cpp format of the simulator at 1.25 times the
// chat's knee stayed "warming up" for 6 minutes.
func TestReadyAfterAnEpisodeFromTheStart(t *testing.T) {
	for _, noRate := range []bool{false, true} {
		o := newOverloaded(func(t float64) float64 { return 2 * t }, noRate)
		d := New(DefaultSettings())
		var v Verdict
		for i := range 30 {
			at, s := o.snap(i)
			v = d.Observe(at, s, nil, false)
			if at.Sub(t0) < DefaultSettings().Window && v.Ready {
				t.Fatalf("no rate %v: ready at %v, before a window of history", noRate, at.Sub(t0))
			}
		}
		if !v.Ready || !v.Modes[QueueGrowth].Raised {
			t.Errorf("no rate %v: after 2m30s of an overload from the start: ready %v, queue_growth raised %v", noRate, v.Ready, v.Modes[QueueGrowth].Raised)
		}
	}
}

// A queue that grows in front of a full KV cache is the cache's queue
// where the engine preempts (kv_preemption); where its preemption
// counter stands still, or it has none (kv_preemption unsupported), the
// cache is simply the engine's capacity and the overload is queue_growth
// (RAG's long prompts at twice their knee: the cache 92 % full, no
// preemption).
func TestQueueInFrontOfAFullCache(t *testing.T) {
	full, none, some := 0.95, 0.0, 5.0
	for _, tc := range []struct {
		name    string
		preempt *float64
		want    bool
	}{{"no preemption counted", &none, true}, {"no preemption counter", nil, true}, {"a preemption a second", &some, false}} {
		o := newOverloaded(func(t float64) float64 { return 2 * t }, false)
		o.kv, o.preempt = &full, tc.preempt
		d := New(DefaultSettings())
		raised := time.Duration(-1)
		for i := range 40 {
			at, s := o.snap(i)
			if v := d.Observe(at, s, nil, false); v.Modes[QueueGrowth].Raised && raised < 0 {
				raised = at.Sub(t0)
			}
		}
		if got := raised >= 0 && raised <= 90*time.Second; got != tc.want {
			t.Errorf("%s: queue_growth raised at %v (-1: never), want within 1m30s %v", tc.name, raised, tc.want)
		}
	}
}

// The baseline is ready once its samples measured half a window, not
// once its first and last lie half a window apart: an episode that
// began after a minute leaves start-up samples on one side of its gap
// and a few healthy ones on the other (the bursty shape at its knee,
// tuning seed 20: prompt tokens per request judged against a baseline
// of 25 s, prefill_interference raised).
func TestBaselineReadyByTheTimeItMeasured(t *testing.T) {
	saved := rules
	t.Cleanup(func() { rules = saved })
	k := new(int)
	ready := map[int]bool{}
	for m := range NumModes {
		rules[m] = func(_, _ *Signals, baseReady, _ bool, _ *Thresholds, _ *Objectives) (bool, string) {
			if m == PrefillInterference {
				ready[*k] = baseReady
			}
			return m == QueueGrowth && *k >= 14 && *k <= 30, "scripted"
		}
	}
	d, e := New(settings()), newEngine()
	for i := range 50 {
		*k = i
		run(d, e, i, 1, func(int) { e.healthy() })
	}
	// queue_growth matches from judgement 14 to 30 and stays raised to
	// 33 (leave 3): every sample of the windows judged meanwhile, 3 to
	// 33, is the episode's. Judgement 48: the baseline holds samples 0
	// to 2 and 34 to 36, 25 s measured (sample 0 measured nothing, the
	// first and the last lie 180 s apart); 49 adds sample 37's 5 s.
	if ready[48] {
		t.Error("judgement 48: the baseline ready with 25 s of samples")
	}
	if !ready[49] {
		t.Error("judgement 49: the baseline not ready with 30 s of samples")
	}
}
