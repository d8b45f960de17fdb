package sim

import "time"

// FinishReason is why a request left the engine, as vLLM labels it.
type FinishReason string

// Finish reasons; vLLM pre-creates all five.
const (
	FinishStop       FinishReason = "stop"
	FinishLength     FinishReason = "length"
	FinishAbort      FinishReason = "abort"
	FinishError      FinishReason = "error"
	FinishRepetition FinishReason = "repetition"
)

// FinishReasons lists every reason in vLLM's order.
var FinishReasons = []FinishReason{FinishStop, FinishLength, FinishAbort, FinishError, FinishRepetition}

func reasonIndex(r FinishReason) int {
	for i, x := range FinishReasons {
		if x == r {
			return i
		}
	}
	return 0
}

// Counters are the engine's cumulative counts since start.
type Counters struct {
	Arrived  uint64
	Finished [5]uint64 // indexed like FinishReasons
	// Preemptions counts requests preempted (vLLM) or retracted (SGLang);
	// RetractedPrompt and RetractedOutput are their token counts then.
	Preemptions                      uint64
	RetractedPrompt, RetractedOutput uint64
	// RecomputedTokens were computed again after a preemption.
	RecomputedTokens uint64
	// PromptTokens counts each request's prompt once, at its first token;
	// PromptComputed and PromptCached split it by source.
	PromptTokens, PromptComputed, PromptCached uint64
	GenerationTokens                           uint64
	// CompletedOutputTokens counts each request's output tokens once,
	// when it finishes (whatever the reason), as llama.cpp b11669 counts
	// tokens_predicted_total.
	CompletedOutputTokens uint64
	// CompletedPromptTokens and CompletedCachedTokens count each
	// request's prompt, and the part of it found in the prefix cache, when
	// it finishes, as trtllm-serve logs them (requests that reached their
	// first token).
	CompletedPromptTokens, CompletedCachedTokens uint64
	// PrefixQueries and PrefixHits are prompt tokens looked up in the
	// prefix cache at first admission and the tokens found.
	PrefixQueries, PrefixHits uint64
	// ResumeHits are tokens a resumed request found still cached.
	ResumeHits uint64
	// PrefillTokens and DecodeTokens are tokens computed by steps.
	PrefillTokens, DecodeTokens uint64
	Steps, StepSeqs             uint64
	// PrefillSteps are the steps that carried prefill work.
	PrefillSteps uint64
	// PrefillBusy and DecodeBusy split step time by whether the step
	// carried prefill work.
	PrefillBusy, DecodeBusy time.Duration
	// PrefillSeconds and DecodeSeconds sum, per finished request, the
	// time from first scheduled to first token and from there to the end.
	PrefillSeconds, DecodeSeconds float64
	// MaxSeqTokens is the longest sequence seen.
	MaxSeqTokens int
}

// FinishedTotal is the number of finished requests, all reasons.
func (c Counters) FinishedTotal() uint64 {
	var n uint64
	for _, v := range c.Finished {
		n += v
	}
	return n
}

// hists are the engine-side histograms, in vLLM and SGLang layouts.
type hists struct {
	ttft, itl, tpot, e2e, queue, inference, prefill, decode *hist
	promptToks, genToks, maxGen, paramsMax, paramsN         *hist
	kvComputed, numPreempt, iterTokens                      *hist

	sgTTFT, sgITL, sgE2E, sgQueue, sgRetractions *hist
	sgPromptToks, sgGenToks                      *hist

	// TGI's, observed for successful requests as its router does.
	tgiE2E, tgiQueue, tgiInference, tgiMeanTPT, tgiGenToks, tgiInput *hist
	// Triton's opt-in first-response histogram, in milliseconds.
	tritonTTFT *hist
	// Dynamo's frontend.
	dynTTFT, dynITL, dynE2E, dynISL, dynOSL, dynCached *hist
}

func newHists(maxModelLen int) hists {
	tok := vllmTokenBuckets(maxModelLen)
	return hists{
		ttft: newHist(vllmTTFTBuckets), itl: newHist(vllmITLBuckets), tpot: newHist(vllmITLBuckets),
		e2e: newHist(vllmReqLatency), queue: newHist(vllmReqLatency), inference: newHist(vllmReqLatency),
		prefill: newHist(vllmReqLatency), decode: newHist(vllmReqLatency),
		promptToks: newHist(tok), genToks: newHist(tok), maxGen: newHist(tok), paramsMax: newHist(tok),
		paramsN: newHist(vllmParamsN), kvComputed: newHist(tok), numPreempt: newHist(vllmPreemptions),
		iterTokens: newHist(vllmIterTokens),

		sgTTFT: newHist(sglangTTFTBuckets), sgITL: newHist(sglangITLBuckets), sgE2E: newHist(sglangE2EBuckets),
		sgQueue: newHist(sglangQueueBuckets), sgRetractions: newHist(sglangRetractions),
		sgPromptToks: newHist(sglangTokenBuckets), sgGenToks: newHist(sglangTokenBuckets),

		tgiE2E: newHist(tgiDurationBuckets), tgiQueue: newHist(tgiDurationBuckets), tgiInference: newHist(tgiDurationBuckets),
		tgiMeanTPT: newHist(tgiDurationBuckets), tgiGenToks: newHist(tgiLinearBuckets(maxModelLen)), tgiInput: newHist(tgiLinearBuckets(maxModelLen - 1)),
		tritonTTFT: newHist(tritonFirstResponseMs),
		dynTTFT:    newHist(dynamoLogBuckets(0.001, 480, 18)), dynITL: newHist(dynamoLogBuckets(0.001, 2, 13)),
		dynE2E: newHist(dynamoLogBuckets(1, 512, 10)), dynISL: newHist(dynamoLogBuckets(50, 128000, 12)),
		dynOSL: newHist(dynamoLogBuckets(50, 32000, 10)), dynCached: newHist(dynamoLogBuckets(50, 128000, 12)),
	}
}

// logWindow keeps the counters of the last completed interval, as the
// engines' periodic stat loggers compute their throughput gauges.
type logWindow struct {
	start     time.Duration
	atStart   Counters
	last      Counters // deltas over the last completed interval
	lastSpan  time.Duration
	hasWindow bool
}

const logInterval = 10 * time.Second

func (w *logWindow) update(now time.Duration, c *Counters) {
	if now-w.start < logInterval {
		return
	}
	w.last = c.minus(&w.atStart)
	w.lastSpan = now - w.start
	w.start, w.atStart, w.hasWindow = now, *c, true
}

func (c *Counters) minus(o *Counters) Counters {
	return Counters{
		GenerationTokens: c.GenerationTokens - o.GenerationTokens,
		PrefixQueries:    c.PrefixQueries - o.PrefixQueries,
		PrefixHits:       c.PrefixHits - o.PrefixHits,
		PromptComputed:   c.PromptComputed - o.PromptComputed,
		PrefillSeconds:   c.PrefillSeconds - o.PrefillSeconds,
		DecodeSeconds:    c.DecodeSeconds - o.DecodeSeconds,
	}
}
