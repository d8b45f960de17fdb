package diagnosis

import (
	"fmt"
	"math"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// rule judges one mode over the window w against the baseline b (usable
// when baseReady); held is set while the mode is raised, when some rules
// also match the steady state of their incident (a plateaued queue, a
// cache that stays full), not only its onset. It returns whether the
// mode matches and, either way, the evidence in words.
type rule func(w, b *Signals, baseReady, held bool, th *Thresholds, o *Objectives) (bool, string)

var rules = [NumModes]rule{
	QueueGrowth:         queueGrowth,
	KVPreemption:        kvPreemption,
	PrefillInterference: prefillInterference,
	KVMonopoly:          kvMonopoly,
	PrefixCacheCollapse: prefixCacheCollapse,
	DecodeSaturation:    decodeSaturation,
	GPUThrottling:       gpuThrottling,
	EngineStall:         engineStall,
}

// atCeiling: the running batch sits at the largest batch observed. Its
// mean over the window decides, not its mean over the window's last
// quarter: at the bursty shape's knee a burst fills the batch for a
// quarter of a window, and judged by it queue_growth was raised in 30
// of 80 hour-long runs (tuning seeds 1 to 20), against none.
func atCeiling(w *Signals, th *Thresholds) bool {
	return w.Running.OK && w.RunningCeiling.OK && w.RunningCeiling.V > 0 && w.Running.V >= th.CeilingShare*w.RunningCeiling.V
}

// growing: the queue grows at least at the slope's bar, and its mean is
// at least the queue's bar; where the bar is scaled by the batch (no
// request rate), the queue over the window's last quarter may stand in
// for its mean: that bar is several times the rate's (a quarter of a
// batch of 128 against a third of a second of requests), and a queue
// growing at 0.6 a second reached it half a window after it was there
// (the slower model at 1.25 times its knee, tuning seeds 2 to 19).
func growing(w *Signals, th *Thresholds) bool {
	slope, least := queueBars(w, th)
	queue := w.Waiting.V
	if !w.RequestsPerSecond.OK && w.WaitingRecent.OK {
		queue = max(queue, w.WaitingRecent.V)
	}
	return w.WaitingSlope.OK && w.WaitingSlope.V >= slope && queue >= least
}

// queueBars are the slope and the mean queue from which a queue counts
// as growing: QueueSlope and QueueMinWaiting, or, for an engine serving
// more requests a second, QueueSlopeShare and QueueMinSeconds of its
// request rate (a queue that random-walks at the knee wanders by more
// requests the more requests are served). Where the engine counts no
// requests, QueueBatchShare of the running batch stands in for the
// rate's bar on the mean queue; the slope's bar stays QueueSlope, since
// a batch says nothing of how fast it turns over (a full batch of long
// chats and one of short exchanges look alike): scaled by it, the chat
// at 1.25 times its knee, its queue growing by 1 a second, went
// unnamed for over two minutes in the llama.cpp format (tuning seeds 2
// and 3).
func queueBars(w *Signals, th *Thresholds) (slope, least float64) {
	slope, least = th.QueueSlope, th.QueueMinWaiting
	switch {
	case w.RequestsPerSecond.OK:
		slope = max(slope, th.QueueSlopeShare*w.RequestsPerSecond.V)
		least = max(least, th.QueueMinSeconds*w.RequestsPerSecond.V)
	case w.Running.OK:
		least = max(least, th.QueueBatchShare*w.Running.V)
	}
	return slope, least
}

// barsBasis says what queueBars scaled the bars by.
func barsBasis(w *Signals) string {
	switch {
	case w.RequestsPerSecond.OK:
		return fmt.Sprintf("at %.1f requests/s served", w.RequestsPerSecond.V)
	case w.Running.OK:
		return fmt.Sprintf("no request rate: by the batch of %.1f", w.Running.V)
	}
	return "no request rate nor batch"
}

func preempting(w *Signals, th *Thresholds) bool {
	return w.PreemptionsPerSecond.OK && w.PreemptionsPerSecond.V >= th.PreemptionRate
}

// queue_growth: waiting grows while the batch is at its ceiling and the
// KV cache is below pressure (a full cache is a KV mode's queue); or the
// queue stands, however flat, at least QueueStandingBatches ceilings long
// with the batch at its ceiling and TTFT broken (its attainment under
// TTFTHold, or the queue's own wait past the objective): a queue that filled and
// stands behind its clients' concurrency cap no longer grows, and the
// window that saw it fill also held the batch of the minute before, under
// its ceiling. Once raised it holds while the queue stands: at its slope
// over the window it would still hold QueueMinWaiting one window from
// now. Clients that time out stop a queue's growth and churn the batch
// under its ceiling (a request admitted just before its deadline is
// aborted within steps), while the engine stays just as overloaded.
func queueGrowth(w, _ *Signals, _, held bool, th *Thresholds, o *Objectives) (bool, string) {
	// A growing queue in front of a full cache is kv_preemption's where
	// the engine preempts; where its preemptions are counted and under
	// that mode's bar, or not counted at all (kv_preemption is then
	// unsupported), the cache is merely the engine's capacity and the
	// queue is the overload's (long prompts filling it: RAG at twice its
	// knee, 92 % full, no preemption, its queue unnamed for minutes).
	kvOK := !w.KVUsage.OK || w.KVUsage.V < th.KVHigh || !preempting(w, th)
	slope, least := queueBars(w, th)
	ahead := w.Waiting.V + w.WaitingSlope.V*w.Span.Seconds()
	standing := held && w.Waiting.OK && w.WaitingSlope.OK && w.Waiting.V >= least && ahead >= least
	long := standingBar(w, th, least)
	// TTFT is broken by the engine's own histogram, or by the queue: at
	// the rate requests are served, one arriving now waits waiting/rate
	// seconds before it is admitted (Little's law), and a wait past the
	// TTFT objective breaks it whatever the engine's TTFT measures
	// (llm-d-inference-sim's leaves the queue out). Where neither is
	// measured (llama.cpp), the queue's length alone decides.
	wait := Value{}
	if w.RequestsPerSecond.OK && w.RequestsPerSecond.V > 0 && w.Waiting.OK {
		wait = some(w.Waiting.V / w.RequestsPerSecond.V)
	}
	ttftBroken := !w.TTFTAttainment.OK && !wait.OK ||
		w.TTFTAttainment.OK && w.TTFTAttainment.V < th.TTFTHold ||
		wait.OK && wait.V >= o.TTFTLatency
	// A standing queue in front of a cache that stays KVHold full is the
	// cache's queue (kv_preemption's steady state), whatever preemption
	// counter the engine lacks.
	kvRoom := !w.KVUsage.OK || w.KVUsage.V < min(th.KVHold, th.KVHigh)
	stood := w.Waiting.OK && w.WaitingSlope.OK && w.Waiting.V >= long && ahead >= least && atCeiling(w, th) && ttftBroken && kvRoom
	ok := (growing(w, th) && atCeiling(w, th) || standing || stood) && kvOK
	if held {
		return ok, fmt.Sprintf("waiting %.1f, slope %+.2f/s: %.0f waiting a window on (held while >= %.0f); running %.1f of ceiling %.0f; KV usage %s (< %.2f)",
			w.Waiting.V, w.WaitingSlope.V, ahead, least, w.Running.V, w.RunningCeiling.V, show(w.KVUsage, "%.2f", 1), th.KVHigh)
	}
	return ok, fmt.Sprintf("waiting %.1f growing %+.2f/s (>= %.2f/s from %.0f waiting, %s), or standing at >= %.0f with TTFT attainment %s (< %.2f) or a wait of %s at the rate served (>= %.1fs); running %.1f of ceiling %.0f (>= %.0f%%); KV usage %s (< %.2f)",
		w.Waiting.V, w.WaitingSlope.V, slope, least, barsBasis(w), long, show(w.TTFTAttainment, "%.3f", 1), th.TTFTHold, show(wait, "%.1fs", 1), o.TTFTLatency,
		w.Running.V, w.RunningCeiling.V, 100*th.CeilingShare, show(w.KVUsage, "%.2f", 1), th.KVHigh)
}

// queueStirring: where the engine counts no requests and the queue's
// bar is scaled by the batch, the queue grows past the fixed bars
// (QueueSlope, QueueMinWaiting) with the batch at its ceiling and the
// cache below pressure. queue_growth's sustain counts from then: the
// scaled bar (a quarter of the batch) is met half a minute or more
// after a steady overload's queue began to grow, while the sustain is
// there to outlast a surge.
func queueStirring(w *Signals, th *Thresholds) bool {
	if w.RequestsPerSecond.OK || !w.Waiting.OK || !w.WaitingSlope.OK {
		return false
	}
	kvOK := !w.KVUsage.OK || w.KVUsage.V < th.KVHigh
	_, least := queueBars(w, th)
	return w.WaitingSlope.V >= th.QueueSlope && w.Waiting.V >= max(th.QueueMinWaiting, least/3) && atCeiling(w, th) && kvOK
}

// queuePaused: the queue holds at least QueuePauseWaits TTFT objectives
// of waiting at the rate requests are served (Little's law), or, where
// the engine counts no requests, the growing queue's bar (scaled by the
// batch, it already holds a quarter of it).
func queuePaused(w *Signals, th *Thresholds, o *Objectives) bool {
	if !w.Waiting.OK {
		return false
	}
	if w.RequestsPerSecond.OK && w.RequestsPerSecond.V > 0 {
		return w.Waiting.V/w.RequestsPerSecond.V >= th.QueuePauseWaits*o.TTFTLatency
	}
	_, least := queueBars(w, th)
	return w.Waiting.V >= least
}

// standingBar is the queue from which a flat queue counts: at least
// QueueStandingBatches running ceilings, and the growing queue's bar.
func standingBar(w *Signals, th *Thresholds, least float64) float64 {
	if !w.RunningCeiling.OK {
		return math.Inf(1)
	}
	return max(least, th.QueueStandingBatches*w.RunningCeiling.V)
}

// kv_preemption: the cache is full and the engine preempts. Once raised
// it holds while the cache stays at least KVHold full: under sustained
// pressure preemptions come in bursts (clients that time out free the
// cache for a while), yet the cache is still too small for the load.
func kvPreemption(w, _ *Signals, _, held bool, th *Thresholds, _ *Objectives) (bool, string) {
	if held {
		hold := min(th.KVHold, th.KVHigh)
		ok := w.KVUsage.OK && w.KVUsage.V >= hold
		return ok, fmt.Sprintf("KV usage %.2f (held while >= %.2f), %.2f preemptions/s (raised at >= %.2f with KV >= %.2f)",
			w.KVUsage.V, hold, w.PreemptionsPerSecond.V, th.PreemptionRate, th.KVHigh)
	}
	ok := w.KVUsage.OK && w.KVUsage.V >= th.KVHigh && preempting(w, th)
	return ok, fmt.Sprintf("KV usage %.2f (>= %.2f), %.2f preemptions/s (>= %.2f)",
		w.KVUsage.V, th.KVHigh, w.PreemptionsPerSecond.V, th.PreemptionRate)
}

// prefill_interference: longer prompts than the baseline's and slower
// token steps, without a growing queue.
func prefillInterference(w, b *Signals, baseReady, _ bool, th *Thresholds, _ *Objectives) (bool, string) {
	if !baseReady || !b.PromptTokensPerRequest.OK || !b.DecodeMean.OK || b.PromptTokensPerRequest.V <= 0 || b.DecodeMean.V <= 0 {
		return false, "no baseline yet"
	}
	pj := w.PromptTokensPerRequest.V / b.PromptTokensPerRequest.V
	dj := w.DecodeMean.V / b.DecodeMean.V
	ok := w.PromptTokensPerRequest.OK && w.DecodeMean.OK && pj >= th.PromptJump && dj >= th.DecodeJump && !growing(w, th)
	return ok, fmt.Sprintf("prompt tokens per request %.0f = %.2fx baseline (>= %.2f); mean ITL %.1f ms = %.2fx baseline (>= %.2f); queue slope %+.2f/s",
		w.PromptTokensPerRequest.V, pj, th.PromptJump, 1000*w.DecodeMean.V, dj, th.DecodeJump, w.WaitingSlope.V)
}

// kv_monopoly: the cache is full, few run, others wait, no preemptions.
// Once raised it holds while a queue stands (QueueMinWaiting waiting)
// and each running request still holds at least MonopolyKVHold times
// its baseline share of the cache, without preemption: when long
// requests end the cache empties for a while and the short requests
// admitted then dilute the window, but the backlog they caused remains
// and the next long requests take the cache again.
func kvMonopoly(w, b *Signals, baseReady, held bool, th *Thresholds, _ *Objectives) (bool, string) {
	few := w.Running.OK && w.RunningCeiling.OK && w.Running.V <= th.MonopolyRunningShare*w.RunningCeiling.V
	// The ceiling observed at a light load is low; then the cache each
	// running request holds, against the baseline's, tells instead.
	per, basePer := w.KVPerRunning, b.KVPerRunning
	heavyBy := func(k float64) bool {
		return baseReady && per.OK && basePer.OK && basePer.V > 0 && per.V >= k*basePer.V
	}
	waiting := w.Waiting.OK && w.Waiting.V >= 1
	if held {
		ok := w.Waiting.OK && w.Waiting.V >= th.QueueMinWaiting && heavyBy(th.MonopolyKVHold) && !preempting(w, th)
		return ok, fmt.Sprintf("%.1f waiting (held while >= %.0f), %.4f of the cache per running request vs %.4f baseline (held while >= %.1fx), KV usage %.2f, %.1f running of ceiling %.0f, %.2f preemptions/s",
			w.Waiting.V, th.QueueMinWaiting, per.V, basePer.V, th.MonopolyKVHold, w.KVUsage.V, w.Running.V, w.RunningCeiling.V, w.PreemptionsPerSecond.V)
	}
	ok := w.KVUsage.OK && w.KVUsage.V >= th.KVHigh && (few || heavyBy(th.MonopolyKVJump)) && waiting && !preempting(w, th)
	return ok, fmt.Sprintf("KV usage %.2f (>= %.2f) with %.1f running of ceiling %.0f (<= %.0f%%) or %.4f of the cache per running request vs %.4f baseline (>= %.1fx), %.1f waiting, %.2f preemptions/s",
		w.KVUsage.V, th.KVHigh, w.Running.V, w.RunningCeiling.V, 100*th.MonopolyRunningShare, per.V, basePer.V, th.MonopolyKVJump, w.Waiting.V, w.PreemptionsPerSecond.V)
}

// prefix_cache_collapse: the hit ratio falls well under its baseline.
func prefixCacheCollapse(w, b *Signals, baseReady, _ bool, th *Thresholds, _ *Objectives) (bool, string) {
	if !baseReady || !b.PrefixHitRatio.OK {
		return false, "no baseline yet"
	}
	// Much longer prompts than usual lower the ratio by their own weight
	// (a new traffic mix, or long contexts), not by losing the cache.
	sameMix := !w.PromptTokensPerRequest.OK || !b.PromptTokensPerRequest.OK ||
		w.PromptTokensPerRequest.V < th.PromptJump*b.PromptTokensPerRequest.V
	ok := w.PrefixHitRatio.OK && b.PrefixHitRatio.V >= th.MinBaselineHitRatio && w.PrefixHitRatio.V <= th.HitRatioFall*b.PrefixHitRatio.V && sameMix
	return ok, fmt.Sprintf("prefix hit ratio %.3f vs baseline %.3f (<= %.0f%% of a baseline >= %.2f); prompt tokens per request %.0f vs %.0f baseline (< %.2fx)",
		w.PrefixHitRatio.V, b.PrefixHitRatio.V, 100*th.HitRatioFall, th.MinBaselineHitRatio, w.PromptTokensPerRequest.V, b.PromptTokensPerRequest.V, th.PromptJump)
}

// decode_saturation: the decode objective is breached while TTFT holds
// and the queue is flat: the batch itself is too large. (Its size is
// evidence, not a condition: with max_num_seqs raised the batch is set by
// the load, far under the engine's cap.) Once raised it holds while the
// decode objective stays breached without preemption: a batch that
// large fills the cache now and then, and the short queue that forms
// while it does breaks TTFT for a minute; the cause is the same batch.
// It also holds while token steps stay DecodeHoldJump times as slow as
// the baseline's: the batch, which the load sets, wanders with it, and
// a minute in which it happens to be smaller brings the attainment back
// over the target for a while (0.96 to 0.985 was seen), though the
// batch is still several times the usual one.
func decodeSaturation(w, b *Signals, baseReady, held bool, th *Thresholds, o *Objectives) (bool, string) {
	flat := !growing(w, th) && w.Waiting.OK && w.Running.OK && (w.Waiting.V <= th.FlatQueueShare*w.Running.V || w.Waiting.V < 1)
	// A batch grown too large makes every step slower than usual. A
	// model whose steps are always that slow (a larger model at its
	// knee) sits near the objective too, and a minute's tail dips under
	// its target now and then while its requests meet the objective over
	// longer spans; so a breach counts only with steps slower than the
	// baseline's, and not before there is a baseline to compare with (a
	// daemon just started on a slow model at its knee raised it in its
	// first minute). Raised, the breach alone holds it.
	slower := baseReady && b.DecodeMean.OK && b.DecodeMean.V > 0 && w.DecodeMean.OK && w.DecodeMean.V >= th.SaturationJump*b.DecodeMean.V
	breached := w.DecodeAttainment.OK && w.DecodeAttainment.V < o.DecodeTarget
	if w.DecodePerToken {
		// The mean is a proxy of the per-request tail, and counts only
		// with slower steps even while the mode is held.
		breached = w.DecodeMean.OK && w.DecodeMean.V >= th.DecodeMeanShare*o.DecodeLatency && slower
	}
	ttftOK := w.TTFTAttainment.OK && w.TTFTAttainment.V >= th.TTFTHold
	slow := baseReady && w.DecodeMean.OK && b.DecodeMean.OK && b.DecodeMean.V > 0 && w.DecodeMean.V >= th.DecodeHoldJump*b.DecodeMean.V
	ok := (breached && slower && ttftOK && flat || held && (breached || slow)) && !preempting(w, th)
	hold := ""
	if held {
		hold = fmt.Sprintf(" (held while the decode objective is breached, or mean ITL stays >= %.1fx the baseline's %.1f ms, without preemption)", th.DecodeHoldJump, 1000*b.DecodeMean.V)
	}
	return ok, fmt.Sprintf("decode attainment %s at %.0f ms (< %.3f) with mean ITL %.1f ms >= %.1fx the baseline's %.1f ms (where only per-token data, that mean >= %.0f%% of %.0f ms instead), TTFT attainment %.3f at %.0f ms (>= %.2f); %.1f waiting for %.1f running (ceiling %.0f)%s",
		show(w.DecodeAttainment, "%.3f", 1), 1000*o.DecodeLatency, o.DecodeTarget, 1000*w.DecodeMean.V, th.SaturationJump, 1000*b.DecodeMean.V, 100*th.DecodeMeanShare, 1000*o.DecodeLatency, w.TTFTAttainment.V, 1000*o.TTFTLatency, th.TTFTHold, w.Waiting.V, w.Running.V, w.RunningCeiling.V, hold)
}

// gpu_throttling: a thermal or hardware slowdown, or a low clock while
// the engine has work that the GPU's own state does not explain. An idle
// GPU (gpu_idle) is not slowed, and a busy GPU at its default power limit
// (sw_power_cap, the enforced limit not lowered) trades clock for power:
// that is full load, not a fault. A limit lowered under the board's
// default is a cap, and counts.
func gpuThrottling(w, _ *Signals, _, _ bool, th *Thresholds, _ *Objectives) (bool, string) {
	reasons := w.GPUThrottledShare.OK && w.GPUThrottledShare.V >= th.ThrottleShare
	busy := w.Running.OK && w.Running.V >= 1
	explained := w.GPUClockExplainedShare.OK && w.GPUClockExplainedShare.V >= th.ThrottleShare
	slow := w.GPUClockRatio.OK && w.GPUClockRatio.V < th.ClockRatio && busy && !explained
	return reasons || slow, fmt.Sprintf("slowdown reasons in %s of readings (>= %.0f%%); SM clock %s of max (< %.2f with %.1f running), explained by idleness or the default power limit in %s of readings (a low clock counts under %.0f%%)",
		show(w.GPUThrottledShare, "%.0f%%", 100), 100*th.ThrottleShare, show(w.GPUClockRatio, "%.2f", 1), th.ClockRatio, w.Running.V,
		show(w.GPUClockExplainedShare, "%.0f%%", 100), 100*th.ThrottleShare)
}

// engine_stall: the target is down, or requests sit in it and no token
// comes out (for StallSilence, or over the whole window), or requests
// end in errors. Down is DownShare of the window's scrapes failed and
// none answered for StallSilence: a target that answers between failed
// scrapes, its counters moving, serves (a run of missed scrapes, 7 of 12
// in a minute, tuning seed 6 at 5 s with one scrape in 10 missed, was
// named engine_stall with 2,600 tokens a second flowing); a dead one
// answers none.
func engineStall(w, _ *Signals, _, _ bool, th *Thresholds, _ *Objectives) (bool, string) {
	down := w.UpShare.OK && 1-w.UpShare.V >= th.DownShare && w.DownFor.OK && w.DownFor.V >= th.StallSilence
	inflight := w.Running.V + w.Waiting.V
	// Silent: neither a token nor an engine step came out over the
	// window, or none for StallSilence seconds up to now. An engine that
	// counts tokens at completion (llama.cpp b11669, TGI) and is still
	// stepping through long generations is not silent.
	// Nor is one whose latency histograms observed tokens streaming.
	gen, steps, tok := w.GenerationTokensPerSecond, w.EngineStepsPerSecond, w.StreamedTokensPerSecond
	silent := (gen.OK || steps.OK) && (!gen.OK || gen.V == 0) && (!steps.OK || steps.V == 0) && (!tok.OK || tok.V == 0) && w.Running.OK && inflight >= 1 ||
		stopped(w, th.StallSilence)
	fin := w.FinishedPerSecond.V * w.Span.Seconds()
	failing := w.ErrorRatio.OK && fin >= th.MinFinished && w.ErrorRatio.V >= th.ErrorRatio
	return down || silent || failing, fmt.Sprintf("up in %.0f%% of scrapes (down >= %.0f%%), none answered for %s (>= %.0fs); no token or step for %s with requests in flight (>= %.0fs; %.1f in flight, %s generated tok/s, %s engine steps/s over the window); %s of %.0f finished in error (>= %.0f%%)",
		100*w.UpShare.V, 100*th.DownShare, show(w.DownFor, "%.0fs", 1), th.StallSilence, show(w.Silent, "%.0fs", 1), th.StallSilence, inflight, show(gen, "%.1f", 1), show(steps, "%.1f", 1), show(w.ErrorRatio, "%.1f%%", 100), fin, 100*th.ErrorRatio)
}

// stopped: no token for at least secs seconds with requests in flight.
func stopped(w *Signals, secs float64) bool {
	return w.Silent.OK && secs > 0 && w.Silent.V >= secs
}

// show formats a signal scaled by k, or says it is not measured.
func show(v Value, format string, k float64) string {
	if !v.OK {
		return "n/a"
	}
	return fmt.Sprintf(format, k*v.V)
}

// support names, per mode, the signals the target lacks. snap is the
// latest snapshot (nil when the scrape failed; then prev, the last good
// one, decides).
func support(snap, prev *snapshot.Snapshot, w Signals) [NumModes][]string {
	if snap == nil {
		snap = prev
	}
	var have struct {
		running, waiting, kv, preempt, prompt, gen, steps, prefix, ttft, decode bool
	}
	if snap != nil {
		for i := range snap.Models {
			m := &snap.Models[i]
			have.running = have.running || m.Gauges[snapshot.Running].OK
			have.waiting = have.waiting || m.Gauges[snapshot.Waiting].OK
			have.kv = have.kv || m.Gauges[snapshot.KVCacheUsage].OK
			have.preempt = have.preempt || m.Counters[snapshot.Preemptions].OK
			have.prompt = have.prompt || m.Counters[snapshot.PromptTokens].OK
			have.gen = have.gen || m.Counters[snapshot.GenerationTokens].OK
			have.steps = have.steps || m.Counters[snapshot.EngineSteps].OK
			have.prefix = have.prefix || m.Counters[snapshot.PrefixCacheQueries].OK && m.Counters[snapshot.PrefixCacheHits].OK ||
				m.Gauges[snapshot.PrefixCacheHitRatio].OK
			have.ttft = have.ttft || m.Hists[snapshot.TTFT] != nil
			have.decode = have.decode || m.Hists[snapshot.ITL] != nil || m.Hists[snapshot.TPOT] != nil
		}
	}
	need := func(pairs ...any) []string {
		var out []string
		for i := 0; i+1 < len(pairs); i += 2 {
			if !pairs[i+1].(bool) {
				out = append(out, pairs[i].(string))
			}
		}
		return out
	}
	var s [NumModes][]string
	s[QueueGrowth] = need("running", have.running, "waiting", have.waiting)
	s[KVPreemption] = need("kv_cache_usage", have.kv, "preemptions", have.preempt)
	s[PrefillInterference] = need("prompt_tokens", have.prompt, "time_to_first_token", have.ttft, "inter_token_latency", have.decode, "waiting", have.waiting)
	s[KVMonopoly] = need("kv_cache_usage", have.kv, "running", have.running, "waiting", have.waiting, "preemptions", have.preempt)
	s[PrefixCacheCollapse] = need("prefix_cache_hits", have.prefix)
	s[DecodeSaturation] = need("inter_token_latency", have.decode, "time_to_first_token", have.ttft, "running", have.running, "waiting", have.waiting, "preemptions", have.preempt)
	s[GPUThrottling] = need("gpu", w.GPUClockRatio.OK || w.GPUThrottledShare.OK)
	s[EngineStall] = need("running", have.running, "waiting", have.waiting, "generation_tokens", have.gen || have.steps)
	return s
}
