package sim

import "time"

// startStep plans and prices one step at e.now and sets the GPU running.
func (e *Engine) startStep() {
	e.abortTimedOut()
	e.schedule(&e.plan)
	if len(e.plan.items) == 0 && e.plan.preempted > 0 {
		e.schedule(&e.plan) // everything yielded; admit in a fresh pass
	}
	if len(e.plan.items) == 0 {
		e.gpu.set(e.gpu.idleSegment())
		return
	}
	if e.onStep != nil {
		e.onStep(&e.plan)
	}
	cost := costOf(&e.cfg.Model, &e.cfg.GPU, &e.plan)
	busy := cost.busy()
	tensor, dram := float64(cost.compute)/float64(busy), float64(cost.memory)/float64(busy)
	// Tensor-core work draws more power than memory traffic; a step is
	// never fully idle while kernels are queued.
	activity := min(1, 0.15+0.55*tensor+0.30*dram)
	f, power, reasons := e.gpu.clocks(activity)
	dur := time.Duration(float64(busy)/f*loadStretch(&e.cfg.Engine, len(e.plan.items)) + 0.5)
	e.gpu.set(gpuSegment{
		powerW: power, busy: true, tensor: tensor, dram: dram,
		clockMHz: roundClock(e.cfg.GPU.MaxSMClockMHz * f), reasons: reasons,
	})
	e.stepping, e.stepStart, e.stepEnd = true, e.now, e.now+dur
	e.lastStep = StepInfo{
		Start: e.now, Duration: dur, Seqs: len(e.plan.items),
		PrefillTokens: e.plan.prefillTokens, DecodeTokens: e.plan.decodeTokens, ClockFactor: f,
	}
}

// loadStretch is EngineSpec.LoadSlowdown's factor for a step of n
// sequences.
func loadStretch(e *EngineSpec, n int) float64 {
	if e.LoadSlowdown <= 1 || e.MaxNumSeqs <= 1 || n <= 1 {
		return 1
	}
	return 1 + (e.LoadSlowdown-1)*float64(min(n, e.MaxNumSeqs)-1)/float64(e.MaxNumSeqs-1)
}

// roundClock snaps to the 15 MHz steps NVIDIA GPUs clock in.
func roundClock(mhz float64) float64 { return float64(int(mhz/15+0.5) * 15) }

// finishStep applies the step's results at its end: computed tokens
// enter the cache, requests that caught up sample a token, and those
// done leave.
func (e *Engine) finishStep() {
	e.stepping = false
	now, bs := e.now, e.kv.blockSize
	p := &e.plan
	for _, it := range p.items {
		r := it.r
		if r.state != stateRunning {
			continue
		}
		again := max(0, min(r.computed+it.n, r.highWater)-r.computed)
		r.recomputed += again
		e.c.RecomputedTokens += uint64(again)
		r.computed += it.n
		r.highWater = max(r.highWater, r.computed)
		full := r.computed / bs
		e.kv.commit(r, r.cachedUpTo, full)
		r.cachedUpTo = full
		if r.computed == r.numTokens() {
			e.sample(r)
		}
	}
	kept := e.running[:0]
	for _, r := range e.running {
		if r.state == stateRunning {
			kept = append(kept, r)
		}
	}
	clear(e.running[len(kept):])
	e.running = kept

	dur := now - e.stepStart
	if p.prefillTokens > 0 {
		e.c.PrefillBusy += dur
		e.c.PrefillSteps++
	} else {
		e.c.DecodeBusy += dur
	}
	e.c.PrefillTokens += uint64(p.prefillTokens)
	e.c.DecodeTokens += uint64(p.decodeTokens)
	e.c.Steps++
	e.c.StepSeqs += uint64(len(p.items))
	e.h.iterTokens.observe(float64(p.prefillTokens + p.decodeTokens))
	e.win.update(now, &e.c)
	e.gpu.set(e.gpu.idleSegment())
}

// sample gives the request its next token.
func (e *Engine) sample(r *request) {
	now := e.now
	r.generated++
	e.c.GenerationTokens++
	e.c.MaxSeqTokens = max(e.c.MaxSeqTokens, r.numTokens())
	if r.generated == 1 {
		r.firstToken = now
		ttft := secs(now - r.arrival)
		e.h.ttft.observe(ttft)
		e.h.sgTTFT.observe(ttft)
		e.h.dynTTFT.observe(ttft)
		e.h.dynISL.observe(float64(r.prompt))
		e.h.dynCached.observe(float64(r.cachedToks))
		e.h.tritonTTFT.observe(1000 * ttft)
		e.c.PromptTokens += uint64(r.prompt)
		e.c.PromptCached += uint64(r.cachedToks)
		e.c.PromptComputed += uint64(r.prompt - r.cachedToks)
		e.c.PrefillSeconds += secs(now - r.firstSched)
	} else {
		itl := now - r.lastToken
		r.itls = append(r.itls, itl)
		e.h.itl.observe(secs(itl))
		// SGLang's tokenizer sees one token per decode step here.
		e.h.sgITL.observeN(secs(itl), 1, secs(itl))
		e.h.dynITL.observe(secs(itl))
	}
	r.lastToken = now
	if r.generated >= r.target {
		reason := FinishStop
		if r.length {
			reason = FinishLength
		}
		e.finish(r, reason)
	}
}

// abortTimedOut drops requests whose client gave up; the engine only
// learns of disconnects between steps.
func (e *Engine) abortTimedOut() {
	late := func(r *request) bool { return e.now >= r.deadline }
	e.waiting.removeIf(func(r *request) bool {
		if late(r) {
			e.finish(r, FinishAbort)
			return true
		}
		return false
	})
	kept := e.running[:0]
	for _, r := range e.running {
		if late(r) {
			e.finish(r, FinishAbort)
			continue
		}
		kept = append(kept, r)
	}
	clear(e.running[len(kept):])
	e.running = kept
}

// finish takes the request out of the engine and records it.
func (e *Engine) finish(r *request, reason FinishReason) {
	now := e.now
	r.state = stateDone
	e.kv.release(r)
	e.c.Finished[reasonIndex(reason)]++
	e.c.CompletedOutputTokens += uint64(r.generated)
	if r.generated > 0 {
		// A request cancelled before its first token never ran its
		// prompt; the simulator logs no prompt tokens for it.
		e.c.CompletedPromptTokens += uint64(r.prompt)
		e.c.CompletedCachedTokens += uint64(r.cachedToks)
	}
	rec := e.record(r, reason)
	e.observeFinished(&rec)
	e.truth.add(rec, now)
	if r.session >= 0 {
		e.classes[r.class].sessionDone(r.session, now)
	}
}
