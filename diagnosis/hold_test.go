package diagnosis

import (
	"testing"
	"time"
)

// The hold conditions of the rules that have one, on hand-built windows:
// each matches only while the mode is raised (held), and misses by one
// named threshold (the defaults).
func TestHeldRules(t *testing.T) {
	th := DefaultThresholds()
	obj := ObjectivesFor("t", nil, th)
	for _, tc := range []struct {
		mode           Mode
		name           string
		edit           func(w *Signals)
		held, unraised bool // the answer while raised, and before
	}{
		// A plateaued queue: 2000 waiting, not growing, the batch churned
		// to 100 of 128 by clients timing out.
		{QueueGrowth, "plateau of 2000, slope -2/s", func(w *Signals) { w.Running, w.Waiting, w.WaitingSlope = v(100), v(2000), v(-2) }, true, false},
		// 2000 - 34/s x 60 s = -40: empty within the window.
		{QueueGrowth, "2000 draining at 34/s", func(w *Signals) { w.Running, w.Waiting, w.WaitingSlope = v(100), v(2000), v(-34) }, false, false},
		// 100 - 1.5/s x 60 s = 10 >= 5: still standing a window on.
		{QueueGrowth, "100 draining at 1.5/s", func(w *Signals) { w.Running, w.Waiting, w.WaitingSlope = v(100), v(100), v(-1.5) }, true, false},
		// 100 - 1.6/s x 60 s = 4 < 5.
		{QueueGrowth, "100 draining at 1.6/s", func(w *Signals) { w.Running, w.Waiting, w.WaitingSlope = v(100), v(100), v(-1.6) }, false, false},
		{QueueGrowth, "4.9 waiting", func(w *Signals) { w.Running, w.Waiting, w.WaitingSlope = v(100), v(4.9), v(0) }, false, false},
		{QueueGrowth, "plateau with the cache full, preempting", func(w *Signals) {
			w.Running, w.Waiting, w.WaitingSlope, w.KVUsage, w.PreemptionsPerSecond = v(100), v(2000), v(0), v(0.95), v(1)
		}, false, false},
		{QueueGrowth, "plateau with the cache full, no preemption counter", func(w *Signals) {
			w.Running, w.Waiting, w.WaitingSlope, w.KVUsage, w.PreemptionsPerSecond = v(100), v(2000), v(0), v(0.95), Value{}
		}, true, false},
		{QueueGrowth, "plateau with the cache full, no preemption", func(w *Signals) {
			w.Running, w.Waiting, w.WaitingSlope, w.KVUsage = v(100), v(2000), v(0), v(0.95)
		}, true, false},
		// The cache stays full, preemptions pause (clients time out).
		{KVPreemption, "KV 0.85, no preemption", func(w *Signals) { w.KVUsage, w.PreemptionsPerSecond = v(0.85), v(0) }, true, false},
		{KVPreemption, "KV 0.79", func(w *Signals) { w.KVUsage, w.PreemptionsPerSecond = v(0.79), v(0) }, false, false},
		{KVPreemption, "KV 0.95 preempting", func(w *Signals) { w.KVUsage, w.PreemptionsPerSecond = v(0.95), v(1) }, true, true},
		// Between long requests: the batch full of short ones, each
		// holding 2x the baseline's 0.1/40 of the cache, a backlog.
		{KVMonopoly, "backlog, per-request cache x2", func(w *Signals) {
			w.KVUsage, w.Running, w.Waiting, w.KVPerRunning = v(0.6), v(120), v(400), v(2*0.1/40)
		}, true, false},
		{KVMonopoly, "backlog, per-request cache x1.4", func(w *Signals) {
			w.KVUsage, w.Running, w.Waiting, w.KVPerRunning = v(0.6), v(120), v(400), v(1.4*0.1/40)
		}, false, false},
		{KVMonopoly, "per-request cache x2, 4.9 waiting", func(w *Signals) {
			w.KVUsage, w.Running, w.Waiting, w.KVPerRunning = v(0.6), v(120), v(4.9), v(2*0.1/40)
		}, false, false},
		{KVMonopoly, "backlog, per-request cache x2, preempting", func(w *Signals) {
			w.KVUsage, w.Running, w.Waiting, w.KVPerRunning, w.PreemptionsPerSecond = v(0.6), v(120), v(400), v(2*0.1/40), v(1)
		}, false, false},
		// A batch of 460 fills the cache: a short queue, TTFT broken.
		{DecodeSaturation, "TPOT breached, TTFT broken by a short queue", func(w *Signals) {
			w.DecodeAttainment, w.TTFTAttainment, w.Running, w.Waiting = v(0), v(0.6), v(460), v(19)
		}, true, false},
		{DecodeSaturation, "TPOT met at 0.95", func(w *Signals) { w.DecodeAttainment, w.TTFTAttainment = v(0.95), v(0.6) }, false, false},
		{DecodeSaturation, "TPOT breached, preempting", func(w *Signals) {
			w.DecodeAttainment, w.PreemptionsPerSecond = v(0), v(1)
		}, false, false},
	} {
		t.Run(tc.mode.String()+"/"+tc.name, func(t *testing.T) {
			w, b := base(), base()
			tc.edit(&w)
			if got, why := rules[tc.mode](&w, &b, true, true, &th, &obj); got != tc.held {
				t.Errorf("held: match %v, want %v: %s", got, tc.held, why)
			}
			if got, why := rules[tc.mode](&w, &b, true, false, &th, &obj); got != tc.unraised {
				t.Errorf("not raised: match %v, want %v: %s", got, tc.unraised, why)
			}
		})
	}
}

// kv_hold above kv_high is clamped to it: the hold is never stricter
// than the entry.
func TestKVHoldClampedToKVHigh(t *testing.T) {
	th := DefaultThresholds()
	th.KVHigh = 0.7
	obj := ObjectivesFor("t", nil, th)
	w, b := base(), base()
	w.KVUsage, w.PreemptionsPerSecond = v(0.75), v(0)
	if ok, why := rules[KVPreemption](&w, &b, true, true, &th, &obj); !ok {
		t.Errorf("KV 0.75 with kv_high 0.7 (kv_hold 0.8): not held: %s", why)
	}
}

// A long episode does not become the baseline: 10 minutes of healthy
// traffic (1000-token prompts), then 20 minutes of 2000-token prompts with
// 30 ms tokens (prefill_interference), with a 5-minute baseline. Without
// the freeze the baseline would hold only long prompts after 6 minutes
// and the mode would clear; with it, the mode holds for the 20 minutes
// and the baseline still says 1000 tokens per request.
func TestBaselineFrozenDuringEpisode(t *testing.T) {
	d, e := New(settings()), newEngine()
	run(d, e, 0, 120, func(int) { e.healthy() })
	long := func(int) { e.longPrompts() }
	vs := run(d, e, 120, 240, long)
	named := -1
	for i, v := range vs {
		raised := v.Modes[PrefillInterference].Raised
		if raised && named < 0 {
			named = i
		}
		if named >= 0 && !raised {
			t.Fatalf("cycle %d (%v into the episode): prefill_interference cleared: %s", i, time.Duration(i)*5*time.Second, v.Modes[PrefillInterference].Evidence)
		}
	}
	if named < 0 || named > 24 {
		t.Fatalf("prefill_interference named at cycle %d of the episode, want within 2 minutes", named)
	}
	last := vs[len(vs)-1]
	// Baseline: healthy prompts only, 10000 tokens per 10 requests.
	if b := last.Baseline.PromptTokensPerRequest; !b.OK || b.V != 1000 {
		t.Errorf("baseline prompt tokens per request %+v after 20 minutes of episode, want 1000 (the healthy traffic)", b)
	}
	// The history kept: the window and 5 minutes of healthy samples
	// (12 + 60, give or take the edges), not the 20 minutes between.
	if n := len(d.hist); n < 70 || n > 75 {
		t.Errorf("history holds %d samples, want about 72 (window + baseline)", n)
	}
	// After the episode the mode clears, and the baseline is fed again.
	vs = run(d, e, 360, 120, func(int) { e.healthy() })
	if vs[len(vs)-1].Modes[PrefillInterference].Raised {
		t.Errorf("prefill_interference still raised 10 minutes after the episode")
	}
	cleared := -1
	for i, v := range vs {
		if !v.Modes[PrefillInterference].Raised {
			cleared = i
			break
		}
	}
	// A window for the long prompts to leave it, then leave (3) clean
	// judgements: about 12 + 3 cycles.
	if cleared < 0 || cleared > 16 {
		t.Errorf("cleared %d cycles after the episode, want within 16", cleared)
	}
	if len(d.frozen) != 0 {
		t.Errorf("frozen spans %v remain once the baseline is past the episode", d.frozen)
	}
}

// stalled advances the engine by a 5 s cycle in which 40 requests run
// and no token comes out: engine_stall.
func (e *engine) stalled() { e.running, e.waiting, e.kv = 40, 10, 0.1 }

// The history stays bounded whatever the episodes: a stall for two hours
// keeps the window and the baseline's healthy samples (5 minutes at 5 s:
// 60, plus the 12 of the window), and one frozen span; stalls of 2
// minutes every 4 minutes for two hours keep no more, and a frozen span
// per episode within the kept history only.
func TestFrozenHistoryBounded(t *testing.T) {
	d, e := New(settings()), newEngine()
	run(d, e, 0, 120, func(int) { e.healthy() })
	vs := run(d, e, 120, 1440, func(int) { e.stalled() })
	if !vs[len(vs)-1].Modes[EngineStall].Raised {
		t.Fatalf("engine_stall not raised after two hours of stall: %s", vs[len(vs)-1].Modes[EngineStall].Evidence)
	}
	if n := len(d.hist); n > 12+61+1 {
		t.Errorf("two hours of stall: %d samples kept, want at most %d", n, 12+61+1)
	}
	if len(d.frozen) != 1 {
		t.Errorf("two hours of one stall: %d frozen spans, want 1", len(d.frozen))
	}
	d, e = New(settings()), newEngine()
	run(d, e, 0, 120, func(int) { e.healthy() })
	maxHist, maxFrozen := 0, 0
	run(d, e, 120, 1440, func(i int) {
		if (i/24)%2 == 0 {
			e.stalled()
		} else {
			e.healthy()
		}
		maxHist, maxFrozen = max(maxHist, len(d.hist)), max(maxFrozen, len(d.frozen))
	})
	// Each healthy spell of 2 minutes gives the baseline about one: its
	// first minute is judged with the stall still in the window, and
	// those samples are the episode's. 5 minutes of baseline reach back
	// over 5 or 6 stalls, a frozen span each.
	if maxHist > 12+61+1 || maxFrozen > 6 {
		t.Errorf("two hours of 2-minute stalls every 4 minutes: up to %d samples and %d frozen spans kept, want at most %d and 6", maxHist, maxFrozen, 12+61+1)
	}
}

// A lasting change of the traffic is not an incident for ever: the
// baseline stays frozen for at most MaxFrozenBaselines baselines (here 6 x
// 5 minutes), after which the new traffic enters it and a mode that
// compares with it clears. Prompts twice as long from minute 10 on, for
// good: prefill_interference is named, held through the 30 minutes of
// freeze, and cleared once the baseline is the new traffic (the freeze,
// plus a window for the samples to leave it, plus one baseline for the
// old healthy samples to leave the baseline: by 37 minutes, 40 allowed).
func TestFreezeEndsOnALastingChange(t *testing.T) {
	d, e := New(settings()), newEngine()
	run(d, e, 0, 120, func(int) { e.healthy() })
	long := func(int) { e.longPrompts() }
	vs := run(d, e, 120, 12*60, long) // an hour at 5 s
	named, cleared := -1, -1
	for i, v := range vs {
		raised := v.Modes[PrefillInterference].Raised
		if raised && named < 0 {
			named = i
		}
		if named >= 0 && !raised && cleared < 0 {
			cleared = i
		}
		if cleared >= 0 && raised {
			t.Fatalf("cycle %d: prefill_interference raised again after it cleared at cycle %d", i, cleared)
		}
	}
	if named < 0 || named > 24 {
		t.Fatalf("prefill_interference named at cycle %d of the change, want within 2 minutes", named)
	}
	minute := 12 // cycles
	if cleared < 30*minute {
		t.Errorf("cleared %v into the change, before the 30 minutes the baseline may stay frozen", time.Duration(cleared)*5*time.Second)
	}
	if cleared < 0 || cleared > 40*minute {
		t.Errorf("cleared at cycle %d (%v into the change), want by 40 minutes", cleared, time.Duration(cleared)*5*time.Second)
	}
	// The baseline is the new traffic: 20000 prompt tokens per 10 requests.
	if b := vs[len(vs)-1].Baseline.PromptTokensPerRequest; !b.OK || b.V != 2000 {
		t.Errorf("baseline prompt tokens per request %+v an hour into the change, want 2000", b)
	}
	if n := len(d.hist); n > 75 {
		t.Errorf("history holds %d samples, want at most about 72 (window + baseline)", n)
	}
	t.Logf("named %v, cleared %v into the change", time.Duration(named)*5*time.Second, time.Duration(cleared)*5*time.Second)
}

// longPrompts advances the engine by a cycle of the healthy step's
// requests and tokens with prompts twice as long (the prefix hit ratio
// unchanged, 40 %) and tokens at 30 ms: prefill_interference.
func (e *engine) longPrompts() { e.serve(20000, 0.03) }
