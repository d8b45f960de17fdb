package sim

// stepItem is one request's share of a step: n tokens from computed on.
type stepItem struct {
	r *request
	n int
}

// stepPlan is what one engine step computes.
type stepPlan struct {
	items                       []stepItem
	prefillTokens, decodeTokens int
	// kvRead is the context, in tokens, whose KV the step reads;
	// attnPairs the query-key pairs attention computes.
	kvRead    int
	attnPairs float64
	preempted int
}

func (p *stepPlan) reset() {
	p.items = p.items[:0]
	p.prefillTokens, p.decodeTokens, p.kvRead, p.attnPairs, p.preempted = 0, 0, 0, 0, 0
}

func (p *stepPlan) add(r *request, n int) {
	p.items = append(p.items, stepItem{r, n})
	if n == 1 && r.generated > 0 && r.computed == r.numTokens()-1 {
		p.decodeTokens++
	} else {
		p.prefillTokens += n
	}
	c0 := float64(r.computed)
	p.kvRead += r.computed + n
	p.attnPairs += float64(n) * (c0 + float64(n+1)/2)
}

// schedule plans one step the way vLLM V1's scheduler does: running
// requests first, in admission order, each taking what it still needs
// (one token for a decode, a chunk of the budget for a prefill); when a
// running request cannot get a block, the newest running request is
// preempted and requeued at the front, possibly the request itself.
// Waiting requests are then admitted FCFS while the budget and the
// sequence cap allow and the cache can hold the whole prompt, but not in
// a step that preempted; the first one that does not fit stops admission.
func (e *Engine) schedule(p *stepPlan) {
	p.reset()
	budget := e.cfg.Engine.MaxNumBatchedTokens
	for i := 0; i < len(e.running) && budget > 0; {
		r := e.running[i]
		n := min(r.numTokens()-r.computed, budget)
		if !e.fits(r) {
			e.finish(r, FinishError)
			e.running = append(e.running[:i], e.running[i+1:]...)
			continue
		}
		for !e.kv.grow(r, r.computed+n) && e.running[len(e.running)-1] != r {
			e.preemptNewest()
			p.preempted++
		}
		if e.kv.blocksFor(r.computed+n) > len(r.blocks) {
			e.preemptNewest() // r is the newest: it yields to the others
			p.preempted++
			break
		}
		p.add(r, n)
		budget -= n
		i++
	}
	if p.preempted > 0 {
		return
	}
	// A request is admitted only if its whole prompt would fit beside the
	// prompts still being prefilled and the watermark, so that a long
	// prompt does not run out of blocks halfway and preempt others.
	reserve := int(e.cfg.Engine.Watermark * float64(e.kv.capacity))
	for _, r := range e.running {
		reserve += max(0, e.kv.blocksFor(r.numTokens())-len(r.blocks))
	}
	for len(e.running) < e.cfg.Engine.MaxNumSeqs && budget > 0 && e.waiting.len() > 0 {
		r := e.waiting.front()
		if !e.fits(r) {
			e.waiting.popFront()
			e.finish(r, FinishError)
			continue
		}
		matched := e.kv.match(r)
		hit := len(matched) * e.kv.blockSize
		n := min(r.numTokens()-hit, budget)
		if !e.kv.admit(r, matched, hit+n, r.numTokens(), reserve) {
			break
		}
		reserve += max(0, e.kv.blocksFor(r.numTokens())-len(r.blocks))
		e.waiting.popFront()
		e.admitted(r, hit)
		p.add(r, n)
		budget -= n
	}
}

// fits reports whether the request's next token can be held by the whole
// cache; a request that cannot would preempt itself forever.
func (e *Engine) fits(r *request) bool {
	return e.kv.blocksFor(r.numTokens()+1) <= e.kv.capacity-int(e.cfg.Engine.Watermark*float64(e.kv.capacity))
}

func (e *Engine) admitted(r *request, hit int) {
	r.state = stateRunning
	r.computed, r.cachedUpTo = hit, hit/e.kv.blockSize
	e.running = append(e.running, r)
	if !r.admitted {
		r.admitted = true
		r.firstSched = e.now
		r.cachedToks = hit
		e.h.sgQueue.observe(secs(e.now - r.arrival))
		e.c.PrefixQueries += uint64(r.prompt)
		e.c.PrefixHits += uint64(hit)
	} else {
		e.c.ResumeHits += uint64(hit)
	}
}

func (e *Engine) preemptNewest() {
	k := len(e.running) - 1
	r := e.running[k]
	e.running = e.running[:k]
	e.kv.release(r)
	r.state = stateWaiting
	r.computed, r.cachedUpTo = 0, 0
	r.preemptions++
	e.c.Preemptions++
	e.c.RetractedPrompt += uint64(r.prompt)
	e.c.RetractedOutput += uint64(r.generated)
	e.waiting.pushFront(r)
}
