package sim

// record builds the ground-truth record of a request finishing now.
func (e *Engine) record(r *request, reason FinishReason) Record {
	rec := Record{
		ID:               r.id,
		Class:            e.classes[r.class].spec.Name,
		Lever:            r.lever,
		Arrival:          r.arrival,
		Scheduled:        r.admitted,
		FirstScheduled:   r.firstSched,
		HasFirstToken:    r.generated > 0,
		FirstToken:       r.firstToken,
		LastToken:        r.lastToken,
		Finish:           e.now,
		PromptTokens:     r.prompt,
		OutputTokens:     r.generated,
		MaxTokens:        r.maxTokens,
		CachedTokens:     r.cachedToks,
		Preemptions:      r.preemptions,
		RecomputedTokens: r.recomputed,
		Reason:           reason,
		ITLs:             r.itls,
	}
	r.itls = nil
	return rec
}

// observeFinished feeds the per-request histograms the way vLLM's
// stat logger does for every finished request, whatever the reason.
func (e *Engine) observeFinished(rec *Record) {
	h := &e.h
	e2e := secs(rec.E2E())
	h.e2e.observe(e2e)
	h.sgE2E.observe(e2e)
	h.queue.observe(secs(rec.Queue()))
	var prefill, decode, inference float64
	if rec.HasFirstToken {
		prefill = secs(rec.FirstToken - rec.FirstScheduled)
		decode = secs(rec.LastToken - rec.FirstToken)
		inference = secs(rec.LastToken - rec.FirstScheduled)
	}
	h.prefill.observe(prefill)
	h.decode.observe(decode)
	h.inference.observe(inference)
	h.tpot.observe(secs(rec.TPOT()))
	h.promptToks.observe(float64(rec.PromptTokens))
	h.genToks.observe(float64(rec.OutputTokens))
	h.sgPromptToks.observe(float64(rec.PromptTokens))
	h.sgGenToks.observe(float64(rec.OutputTokens))
	h.maxGen.observe(float64(rec.MaxTokens))
	h.paramsMax.observe(float64(rec.MaxTokens))
	h.paramsN.observe(1)
	h.kvComputed.observe(float64(rec.PromptTokens - rec.CachedTokens))
	h.numPreempt.observe(float64(rec.Preemptions))
	h.sgRetractions.observe(float64(rec.Preemptions))
	e.c.DecodeSeconds += decode
	// TGI observes its request histograms when a request succeeds, the
	// input length for every validated request.
	h.tgiInput.observe(float64(rec.PromptTokens))
	if rec.Reason == FinishStop || rec.Reason == FinishLength {
		h.tgiE2E.observe(e2e)
		h.tgiQueue.observe(secs(rec.Queue()))
		h.tgiInference.observe(inference)
		if rec.OutputTokens > 0 {
			h.tgiMeanTPT.observe(inference / float64(rec.OutputTokens))
		}
		h.tgiGenToks.observe(float64(rec.OutputTokens))
	}
	// Dynamo's frontend, for every request it saw end (the input length
	// and cached tokens are observed with the first token).
	h.dynE2E.observe(e2e)
	h.dynOSL.observe(float64(rec.OutputTokens))
}
