package diagnosis

import (
	"math"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// A stopped engine whose hung batch sits at its ceiling while the queue
// grows behind it (10 requests a second, no token out): the queue is the
// stall's symptom, so queue_growth must never be raised, not even in the
// half window before engine_stall can be named; engine_stall is named
// once the silence reaches StallSilence, with the silence in its
// evidence.
func TestStalledEngineIsNotAQueue(t *testing.T) {
	d, e := New(settings()), newEngine()
	const healthyCycles = 80
	vs := run(d, e, 0, healthyCycles, func(int) { e.healthy() })
	for i, v := range vs {
		if len(v.Raised()) > 0 {
			t.Fatalf("healthy cycle %d raised %v", i, v.Raised())
		}
	}
	// The stall: the 40 running never finish (the batch observed at its
	// ceiling all along), every 5 s 50 more wait, no counter moves.
	stall := run(d, e, healthyCycles, 24, func(int) { e.waiting += 50 })
	named := -1
	for k, v := range stall {
		// The window holds the last minute: the silence it shows too.
		silent := min(5*float64(k+1), 60)
		if got := v.Window.Silent; !got.OK || math.Abs(got.V-silent) > 1e-9 {
			t.Fatalf("stall cycle %d: silent %+v, want %.0f s", k, got, silent)
		}
		for _, m := range v.Raised() {
			if m != EngineStall {
				t.Fatalf("stall cycle %d (%.0f s silent): %s raised: %s", k, silent, m, v.Modes[m].Evidence)
			}
		}
		if v.Modes[QueueGrowth].Matching {
			t.Fatalf("stall cycle %d: queue_growth counts as matching", k)
		}
		if named < 0 && v.Modes[EngineStall].Raised {
			named = k
		}
	}
	// The stall rule matches at 30 s of silence (the 6th silent cycle) and
	// enter 2 raises it a cycle later: 35 s after the last token.
	if want := 6; named != want {
		t.Fatalf("engine_stall raised at stall cycle %d, want %d (35 s of silence)", named, want)
	}
	// Meanwhile the queue's own rule matched (waiting grew at the
	// ceiling): it is evidence, masked by the stall.
	v := stall[3]
	if st := v.Modes[QueueGrowth]; !st.Masked || st.MaskedBy != EngineStall {
		t.Fatalf("20 s into the stall queue_growth is %+v, want masked by engine_stall", st)
	}
}

// A missed scrape neither breaks nor extends the silence; tokens end it;
// nothing in flight is no silence.
func TestSilenceByHand(t *testing.T) {
	mk := func(gen, running, waiting float64, delta bool) sample {
		s := sample{delta: delta, dt: 5, running: some(running), waiting: some(waiting)}
		s.ctr[snapshot.GenerationTokens] = some(gen)
		return s
	}
	for _, tc := range []struct {
		name string
		ss   []sample
		want Value
	}{
		{"tokens in the last interval", []sample{mk(0, 3, 0, true), mk(10, 3, 0, true)}, some(0)},
		{"two silent intervals after tokens", []sample{mk(10, 3, 0, true), mk(0, 3, 0, true), mk(0, 3, 2, true)}, some(10)},
		{"a missed scrape in between", []sample{mk(10, 3, 0, true), mk(0, 3, 0, true), {t: t0}, mk(0, 3, 0, true)}, some(10)},
		{"idle: nothing in flight", []sample{mk(0, 0, 0, true), mk(0, 0, 0, true)}, some(0)},
		{"only waiting, none running", []sample{mk(10, 1, 0, true), mk(0, 0, 4, true)}, some(5)},
		{"no counter", []sample{{delta: true, dt: 5, running: some(3)}}, Value{}},
	} {
		if got := silence(tc.ss); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// The queue's bars by hand: the fixed ones at the chat's knee and
// without a request rate or batch, scaled at 100 requests a second, and
// without a request rate the mean queue's by the batch: a quarter of 116
// running is 29 waiting (the slope's stays 0.2/s); a quarter of 8 slots
// is under the fixed bar. A request rate, where there is one, decides.
func TestQueueBarsByHand(t *testing.T) {
	th := DefaultThresholds()
	for _, tc := range []struct {
		rate, running Value
		slope, wait   float64
	}{
		{Value{}, Value{}, 0.2, 5},
		{some(16), some(128), 0.2, 5},
		{some(8), Value{}, 0.2, 5},
		{some(100), some(10), 1.25, 31.25},
		{Value{}, some(116), 0.2, 29},
		{Value{}, some(8), 0.2, 5},
	} {
		s, w := queueBars(&Signals{RequestsPerSecond: tc.rate, Running: tc.running}, &th)
		if math.Abs(s-tc.slope) > 1e-12 || math.Abs(w-tc.wait) > 1e-12 {
			t.Errorf("rate %+v: bars %.4f/s from %.4f, want %.4f/s from %.4f", tc.rate, s, w, tc.slope, tc.wait)
		}
	}
}

// decode_saturation on per-token data: the mean at the bar counts only
// with steps slower than the baseline's; raised, it holds while steps
// stay decode_hold_jump times the baseline's, though the mean dipped
// under the bar.
func TestDecodeSaturationPerTokenByHand(t *testing.T) {
	th := DefaultThresholds()
	o := Objectives{DecodeLatency: 0.05, DecodeTarget: 0.95, TTFTLatency: 0.5, TTFTTarget: 0.99}
	win := func(itl float64) *Signals {
		return &Signals{DecodePerToken: true, DecodeMean: some(itl), TTFTAttainment: some(1),
			Waiting: some(0), Running: some(100), WaitingSlope: some(0), PreemptionsPerSecond: some(0)}
	}
	base := func(itl float64) *Signals { return &Signals{DecodeMean: some(itl)} }
	for _, tc := range []struct {
		name       string
		w, b       *Signals
		held, want bool
	}{
		{"a slow model at its knee: 42 ms, as usual", win(0.042), base(0.040), false, false},
		{"the batch grew: 42 ms against 13", win(0.042), base(0.013), false, true},
		{"a slower model's batch wandering at its knee: 42 ms against 30 (1.4x)", win(0.042), base(0.030), false, false},
		{"42 ms against 28 (1.5x)", win(0.042), base(0.028), false, true},
		{"under the bar", win(0.039), base(0.013), false, false},
		{"raised, dipped under the bar, still 3x the baseline", win(0.039), base(0.013), true, true},
		{"raised, back to the usual steps", win(0.014), base(0.013), true, false},
	} {
		got, why := decodeSaturation(tc.w, tc.b, true, tc.held, &th, &o)
		if got != tc.want {
			t.Errorf("%s: %v, want %v (%s)", tc.name, got, tc.want, why)
		}
	}
}

// The verdict carries the bars the window's queue was judged against,
// worked by hand: 10 requests every 5 s are 2 a second, under the chat's
// knee, so the fixed bars; 116 running without a request count (TTFT
// histogram and finished counts gone, as on llama.cpp) make a quarter of
// 116, 29 waiting, still growing by 0.2 a second.
func TestVerdictQueueBarsByHand(t *testing.T) {
	for _, tc := range []struct {
		name              string
		noCount           bool
		running           float64
		slopeBar, waitBar float64
	}{
		{"requests counted", false, 40, 0.2, 5},
		{"no request count", true, 116, 0.2, 29},
	} {
		d, e := New(settings()), newEngine()
		var v Verdict
		for i := range 30 {
			e.healthy()
			e.running = tc.running
			at := t0.Add(time.Duration(i) * 5 * time.Second)
			s := e.snap(at)
			if tc.noCount {
				s.Models[0].Hists[snapshot.TTFT] = nil
				s.Models[0].Finished = nil
			}
			v = d.Observe(at, s, nil, false)
		}
		if !v.QueueSlopeBar.OK || !v.QueueWaitingBar.OK || math.Abs(v.QueueSlopeBar.V-tc.slopeBar) > 1e-9 || math.Abs(v.QueueWaitingBar.V-tc.waitBar) > 1e-9 {
			t.Errorf("%s: bars %+v/s from %+v, want %g/s from %g (requests/s %+v)", tc.name, v.QueueSlopeBar, v.QueueWaitingBar, tc.slopeBar, tc.waitBar, v.Window.RequestsPerSecond)
		}
	}
}

// Without a baseline (a daemon just started) a breached decode objective
// does not raise decode_saturation: whether the steps are slower than the
// usual ones cannot be told. With one, steps 3x the baseline's do.
func TestDecodeSaturationNeedsABaseline(t *testing.T) {
	th := DefaultThresholds()
	o := Objectives{DecodeLatency: 0.05, DecodeTarget: 0.95, TTFTLatency: 0.5, TTFTTarget: 0.99}
	w := &Signals{DecodeAttainment: some(0.9), DecodeMean: some(0.042), TTFTAttainment: some(1),
		Waiting: some(0), Running: some(100), WaitingSlope: some(0), PreemptionsPerSecond: some(0)}
	if ok, why := decodeSaturation(w, &Signals{}, false, false, &th, &o); ok {
		t.Errorf("no baseline: raised (%s)", why)
	}
	if ok, why := decodeSaturation(w, &Signals{DecodeMean: some(0.014)}, true, false, &th, &o); !ok {
		t.Errorf("steps 3x the baseline's: not raised (%s)", why)
	}
}

// An engine that adds its generated tokens to the counter only when a
// request completes (llm-d-inference-sim), serving long answers: no
// request completes in three cycles of four, yet every token is observed
// in its inter-token histogram as it streams. It is not silent, and
// nothing is raised; the same cycles with the histogram still would be
// silent for 15 s (TestStalledEngineIsNotAQueue has the real stall).
func TestTokensCountedAtCompletionAreNotSilence(t *testing.T) {
	for _, streams := range []bool{true, false} {
		d, e := New(settings()), newEngine()
		run(d, e, 0, 60, func(int) { e.healthy() })
		var longest float64
		vs := run(d, e, 60, 40, func(i int) {
			e.running, e.waiting = 40, 0
			if streams {
				observe(e.itl, 0.02, 2500)
			}
			if i%4 == 3 {
				e.ctr[snapshot.GenerationTokens] += 4 * 2500
				e.fin["stop"] += 40
			}
		})
		for k, v := range vs {
			longest = max(longest, v.Window.Silent.V)
			if streams && len(v.Raised()) > 0 {
				t.Fatalf("cycle %d: %v raised (%s)", k, v.Raised(), v.Modes[EngineStall].Evidence)
			}
		}
		if want := map[bool]float64{true: 0, false: 15}[streams]; longest != want {
			t.Errorf("streaming %v: longest silence %.0f s, want %.0f", streams, longest, want)
		}
	}
}
