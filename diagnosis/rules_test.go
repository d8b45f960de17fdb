package diagnosis

import (
	"testing"
	"time"
)

func v(x float64) Value { return Value{V: x, OK: true} }

// base is a healthy window: 40 running of a ceiling of 128, nothing
// waiting, a tenth of the cache, 1000-token prompts, 40 % prefix hits,
// 20 ms per token, every objective met.
func base() Signals {
	return Signals{
		Span: time.Minute, Cycles: 12, UpShare: v(1), DownFor: v(0),
		Running: v(40), RunningCeiling: v(128), Waiting: v(0), WaitingSlope: v(0),
		KVUsage: v(0.1), KVPerRunning: v(0.1 / 40), PreemptionsPerSecond: v(0),
		TTFTAttainment: v(1), DecodeAttainment: v(1), DecodeMean: v(0.02),
		PromptTokensPerSecond: v(10000), PromptTokensPerRequest: v(1000), PrefixHitRatio: v(0.4),
		GenerationTokensPerSecond: v(2500), FinishedPerSecond: v(10), RequestsPerSecond: v(10), ErrorRatio: v(0), AbortRatio: v(0),
		GPUClockRatio: v(1), GPUThrottledShare: v(0),
	}
}

// Each rule on a hand-built window that matches and on one that misses by
// one named threshold (the defaults).
func TestRules(t *testing.T) {
	th := DefaultThresholds()
	obj := ObjectivesFor("t", nil, th)
	for _, tc := range []struct {
		mode  Mode
		name  string
		edit  func(w *Signals)
		match bool
	}{
		{QueueGrowth, "growing at the ceiling", func(w *Signals) { w.Running, w.Waiting, w.WaitingSlope = v(128), v(100), v(2) }, true},
		{QueueGrowth, "slope under 0.2/s", func(w *Signals) { w.Running, w.Waiting, w.WaitingSlope = v(128), v(100), v(0.19) }, false},
		{QueueGrowth, "fewer than 5 waiting", func(w *Signals) { w.Running, w.Waiting, w.WaitingSlope = v(128), v(4.9), v(2) }, false},
		{QueueGrowth, "batch under 90% of the ceiling", func(w *Signals) { w.Running, w.Waiting, w.WaitingSlope = v(115), v(100), v(2) }, false},
		{QueueGrowth, "cache full and preempting: a KV mode's queue", func(w *Signals) {
			w.Running, w.Waiting, w.WaitingSlope, w.KVUsage, w.PreemptionsPerSecond = v(128), v(100), v(2), v(0.95), v(1)
		}, false},
		{QueueGrowth, "cache full, no preemption counter: kv_preemption unsupported, the queue grows", func(w *Signals) {
			w.Running, w.Waiting, w.WaitingSlope, w.KVUsage, w.PreemptionsPerSecond = v(128), v(100), v(2), v(0.95), Value{}
		}, true},
		{QueueGrowth, "cache full, no preemption: the cache is the capacity", func(w *Signals) {
			w.Running, w.Waiting, w.WaitingSlope, w.KVUsage = v(128), v(100), v(2), v(0.95)
		}, true},
		// A queue that stands, flat, behind the batch at its ceiling: at
		// least one ceiling (128) long, TTFT under 0.9 of its objective,
		// the cache under kv_hold (0.8).
		{QueueGrowth, "standing at 300, TTFT 0.1", func(w *Signals) {
			w.Running, w.Waiting, w.WaitingSlope, w.TTFTAttainment = v(128), v(300), v(0), v(0.1)
		}, true},
		{QueueGrowth, "standing at 300, TTFT absent", func(w *Signals) {
			w.Running, w.Waiting, w.WaitingSlope, w.TTFTAttainment = v(128), v(300), v(0), Value{}
		}, true},
		// 300 waiting at 700 served a second: a wait of 0.43 s, under the
		// 0.5 s objective; TTFT 0.9 holds.
		{QueueGrowth, "standing at 300, TTFT 0.9 holds, a wait of 0.43 s", func(w *Signals) {
			w.Running, w.Waiting, w.WaitingSlope, w.TTFTAttainment, w.RequestsPerSecond = v(128), v(300), v(0), v(0.9), v(700)
		}, false},
		// An engine whose TTFT leaves the queue out (llm-d-inference-sim):
		// its TTFT holds, but 300 waiting at 10 a second wait 30 s.
		{QueueGrowth, "standing at 300, TTFT 1 without the queue, a wait of 30 s", func(w *Signals) {
			w.Running, w.Waiting, w.WaitingSlope, w.TTFTAttainment = v(128), v(300), v(0), v(1)
		}, true},
		{QueueGrowth, "standing at 300, no TTFT, no request rate", func(w *Signals) {
			w.Running, w.Waiting, w.WaitingSlope, w.TTFTAttainment, w.RequestsPerSecond = v(128), v(300), v(0), Value{}, Value{}
		}, true},
		{QueueGrowth, "standing at 127, under one ceiling", func(w *Signals) {
			w.Running, w.Waiting, w.WaitingSlope, w.TTFTAttainment = v(128), v(127), v(0), v(0.1)
		}, false},
		{QueueGrowth, "standing at 300, batch under 90% of the ceiling", func(w *Signals) {
			w.Running, w.Waiting, w.WaitingSlope, w.TTFTAttainment = v(115), v(300), v(0), v(0.1)
		}, false},
		{QueueGrowth, "standing at 300, the cache 0.8 full", func(w *Signals) {
			w.Running, w.Waiting, w.WaitingSlope, w.TTFTAttainment, w.KVUsage = v(128), v(300), v(0), v(0.1), v(0.8)
		}, false},
		{QueueGrowth, "300 draining to under 5 within the window", func(w *Signals) {
			w.Running, w.Waiting, w.WaitingSlope, w.TTFTAttainment = v(128), v(300), v(-5), v(0.1)
		}, false},
		{KVPreemption, "full and preempting", func(w *Signals) { w.KVUsage, w.PreemptionsPerSecond = v(0.95), v(1) }, true},
		{KVPreemption, "preempting below 0.9", func(w *Signals) { w.KVUsage, w.PreemptionsPerSecond = v(0.89), v(1) }, false},
		{KVPreemption, "full, one preemption a minute", func(w *Signals) { w.KVUsage, w.PreemptionsPerSecond = v(0.95), v(1.0/60) }, false},
		{KVMonopoly, "full with few running", func(w *Signals) { w.KVUsage, w.Running, w.Waiting = v(0.99), v(10), v(50) }, true},
		{KVMonopoly, "full, the usual batch, per-request cache x4", func(w *Signals) {
			w.KVUsage, w.Running, w.Waiting, w.RunningCeiling, w.KVPerRunning = v(0.99), v(40), v(50), v(50), v(0.4/40)
		}, false},
		{KVMonopoly, "full with few running but preempting", func(w *Signals) {
			w.KVUsage, w.Running, w.Waiting, w.PreemptionsPerSecond = v(0.99), v(10), v(50), v(1)
		}, false},
		{KVMonopoly, "full, the usual batch, per-request cache x10", func(w *Signals) {
			// 0.99/40 per request against the baseline's 0.1/40: 9.9x.
			w.KVUsage, w.Running, w.Waiting, w.RunningCeiling, w.KVPerRunning = v(0.99), v(40), v(50), v(50), v(0.99/40)
		}, true},
		{KVMonopoly, "full, nothing waiting", func(w *Signals) { w.KVUsage, w.Running, w.Waiting = v(0.99), v(10), v(0) }, false},
		{PrefillInterference, "1.6x prompts, 1.5x ITL", func(w *Signals) { w.PromptTokensPerRequest, w.DecodeMean = v(1600), v(0.03) }, true},
		{PrefillInterference, "1.2x prompts", func(w *Signals) { w.PromptTokensPerRequest, w.DecodeMean = v(1200), v(0.03) }, false},
		{PrefillInterference, "prompts but ITL unchanged", func(w *Signals) { w.PromptTokensPerRequest, w.DecodeMean = v(1600), v(0.021) }, false},
		{PrefillInterference, "and the queue grows", func(w *Signals) {
			w.PromptTokensPerRequest, w.DecodeMean, w.Waiting, w.WaitingSlope = v(1600), v(0.03), v(50), v(1)
		}, false},
		{PrefixCacheCollapse, "hits to zero", func(w *Signals) { w.PrefixHitRatio = v(0) }, true},
		{PrefixCacheCollapse, "hits halved", func(w *Signals) { w.PrefixHitRatio = v(0.2) }, false},
		{PrefixCacheCollapse, "hits down because prompts are 4x longer", func(w *Signals) { w.PrefixHitRatio, w.PromptTokensPerRequest = v(0.1), v(4000) }, false},
		// Steps 1.6x the baseline's 20 ms (the bar is 1.5x).
		{DecodeSaturation, "TPOT breached, TTFT holds, no queue", func(w *Signals) { w.DecodeAttainment, w.DecodeMean = v(0.5), v(0.032) }, true},
		{DecodeSaturation, "TPOT at 0.95 is met", func(w *Signals) { w.DecodeAttainment, w.DecodeMean = v(0.95), v(0.032) }, false},
		{DecodeSaturation, "TPOT breached with steps as usual: a slow model at its knee", func(w *Signals) { w.DecodeAttainment, w.DecodeMean = v(0.944), v(0.0299) }, false},
		{DecodeSaturation, "TTFT broken too: a queue", func(w *Signals) { w.DecodeAttainment, w.TTFTAttainment, w.DecodeMean = v(0.5), v(0.5), v(0.032) }, false},
		{DecodeSaturation, "a queue of 10% of the batch", func(w *Signals) { w.DecodeAttainment, w.Waiting, w.DecodeMean = v(0.5), v(4), v(0.032) }, false},
		{DecodeSaturation, "per-token data: mean ITL 41ms of 50ms", func(w *Signals) {
			w.DecodeAttainment, w.DecodePerToken, w.DecodeMean = Value{}, true, v(0.041)
		}, true},
		{DecodeSaturation, "per-token data: mean ITL 39ms", func(w *Signals) {
			w.DecodeAttainment, w.DecodePerToken, w.DecodeMean = Value{}, true, v(0.039)
		}, false},
		{GPUThrottling, "thermal slowdown in 60% of readings", func(w *Signals) { w.GPUThrottledShare = v(0.6) }, true},
		{GPUThrottling, "clock at 80% with work", func(w *Signals) { w.GPUClockRatio = v(0.8) }, true},
		{GPUThrottling, "clock at 80% idle", func(w *Signals) { w.GPUClockRatio, w.Running = v(0.8), v(0) }, false},
		{GPUThrottling, "clock at 90%", func(w *Signals) { w.GPUClockRatio = v(0.9) }, false},
		{EngineStall, "running, no tokens", func(w *Signals) { w.GenerationTokensPerSecond = v(0) }, true},
		{EngineStall, "idle, no tokens", func(w *Signals) { w.GenerationTokensPerSecond, w.Running = v(0), v(0) }, false},
		{EngineStall, "6% errors of 600", func(w *Signals) { w.ErrorRatio = v(0.06) }, true},
		{EngineStall, "4% errors", func(w *Signals) { w.ErrorRatio = v(0.04) }, false},
		{EngineStall, "50% errors of 6", func(w *Signals) { w.ErrorRatio, w.FinishedPerSecond = v(0.5), v(0.1) }, false},
		{EngineStall, "aborts are not errors", func(w *Signals) { w.AbortRatio = v(0.5) }, false},
		{EngineStall, "down half the window, none answered for 30 s", func(w *Signals) { w.UpShare, w.DownFor = v(0.5), v(30) }, true},
		{EngineStall, "down half the window, answering between failures", func(w *Signals) { w.UpShare, w.DownFor = v(0.42), v(5) }, false},
		{EngineStall, "none answered for 30 s, up in 60 % of the window", func(w *Signals) { w.UpShare, w.DownFor = v(0.6), v(30) }, false},
	} {
		t.Run(tc.mode.String()+"/"+tc.name, func(t *testing.T) {
			w, b := base(), base()
			tc.edit(&w)
			got, why := rules[tc.mode](&w, &b, true, false, &th, &obj)
			if got != tc.match {
				t.Errorf("match %v, want %v: %s", got, tc.match, why)
			}
		})
	}
}

// Baseline-relative rules never match without a baseline.
func TestRulesNeedBaseline(t *testing.T) {
	th := DefaultThresholds()
	obj := ObjectivesFor("t", nil, th)
	w, b := base(), base()
	w.PrefixHitRatio = v(0)
	w.PromptTokensPerRequest, w.DecodeMean = v(1600), v(0.03)
	for _, m := range []Mode{PrefixCacheCollapse, PrefillInterference} {
		if ok, _ := rules[m](&w, &b, false, false, &th, &obj); ok {
			t.Errorf("%s matched without a baseline", m)
		}
	}
}
