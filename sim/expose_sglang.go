package sim

// sglangText renders SGLang's metric families: scheduler metrics carry
// engine_type, model_name, pp_rank and tp_rank, tokenizer metrics
// model_name only. Retractions are SGLang's preemptions.
func (e *Engine) sglangText() string {
	x := &expo{num: pyFloat, sortLabels: true}
	c := &e.c
	model := e.cfg.Model.Name
	sched := []label{{"engine_type", "unified"}, {"model_name", model}, {"pp_rank", "0"}, {"tp_rank", "0"}}
	tok := []label{{"model_name", model}}
	one := func(name, help, typ string, labels []label, v float64) {
		x.family(name, help, typ)
		x.sample(name, labels, v)
	}
	with := func(k, v string) []label { return append(sched[:4:4], label{k, v}) }

	var decodeLens int
	for _, r := range e.running {
		if r.generated > 0 {
			decodeLens += r.numTokens()
		}
	}
	hitRate, genRate := e.cacheHitRate(), 0.0
	if w := &e.win; w.hasWindow {
		genRate = float64(w.last.GenerationTokens) / w.lastSpan.Seconds()
	}
	usedTokens := float64(e.kv.used * e.kv.blockSize)
	one("sglang:num_running_reqs", "The number of running requests.", "gauge", sched, float64(len(e.running)))
	one("sglang:num_used_tokens", "The number of used tokens.", "gauge", sched, usedTokens)
	one("sglang:token_usage", "The token usage.", "gauge", sched, e.kv.usage())
	one("sglang:decode_sum_seq_lens", "The sum of all sequence lengths in decode.", "gauge", sched, float64(decodeLens))
	one("sglang:gen_throughput", "The generation throughput (token/s).", "gauge", sched, genRate)
	one("sglang:num_queue_reqs", "The number of requests in the waiting queue.", "gauge", sched, float64(e.waiting.len()))
	one("sglang:cache_hit_rate", "The prefix cache hit rate.", "gauge", sched, hitRate)
	one("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", "gauge", sched, float64(e.kv.capacity*e.kv.blockSize))
	one("sglang:num_retracted_requests_total", "Total number of retracted requests.", "counter", sched, float64(c.Preemptions))
	one("sglang:num_retracted_input_tokens_total", "Total number of retracted input tokens.", "counter", sched, float64(c.RetractedPrompt))
	one("sglang:num_retracted_output_tokens_total", "Total number of retracted output tokens.", "counter", sched, float64(c.RetractedOutput))
	x.family("sglang:queue_time_seconds", "Histogram of queueing time in seconds.", "histogram")
	x.histogram("sglang:queue_time_seconds", sched, e.h.sgQueue)
	x.family("sglang:realtime_tokens_total", "Total number of tokens processed (updated on each log interval). mode: prefill_compute, prefill_cache, decode.", "counter")
	x.sample("sglang:realtime_tokens_total", with("mode", "prefill_compute"), float64(c.PrefillTokens))
	x.sample("sglang:realtime_tokens_total", with("mode", "prefill_cache"), float64(c.PrefixHits+c.ResumeHits))
	x.sample("sglang:realtime_tokens_total", with("mode", "decode"), float64(c.DecodeTokens))
	x.family("sglang:gpu_execution_seconds_total", "Total time that GPU is busy executing a workload. Refer to ForwardMode for category labels.", "counter")
	x.sample("sglang:gpu_execution_seconds_total", with("category", "EXTEND"), c.PrefillBusy.Seconds())
	x.sample("sglang:gpu_execution_seconds_total", with("category", "DECODE"), c.DecodeBusy.Seconds())

	one("sglang:prompt_tokens_total", "Number of prefill tokens processed.", "counter", tok, float64(c.PromptTokens))
	one("sglang:generation_tokens_total", "Number of generation tokens processed.", "counter", tok, float64(c.GenerationTokens))
	one("sglang:cached_tokens_total", "Number of cached prompt tokens.", "counter", tok, float64(c.PromptCached))
	one("sglang:num_requests_total", "Number of requests processed.", "counter", tok, float64(c.FinishedTotal()))
	aborted := c.Finished[reasonIndex(FinishAbort)] + c.Finished[reasonIndex(FinishError)]
	one("sglang:num_aborted_requests_total", "Number of requests aborted.", "counter", tok, float64(aborted))
	hist := func(name, help string, h *hist) {
		x.family(name, help, "histogram")
		x.histogram(name, tok, h)
	}
	hist("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", e.h.sgTTFT)
	hist("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", e.h.sgITL)
	hist("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", e.h.sgE2E)
	hist("sglang:num_retractions", "Histogram of retraction counts per request.", e.h.sgRetractions)
	if e.cfg.Engine.TokenHistograms {
		hist("sglang:prompt_tokens_histogram", "Histogram of prompt token length.", e.h.sgPromptToks)
		hist("sglang:generation_tokens_histogram", "Histogram of generation token length.", e.h.sgGenToks)
	}
	return x.b.String()
}

// cacheHitRate is the prefix hit ratio of the last log interval (since
// start until the first interval completes), as SGLang's gauge.
func (e *Engine) cacheHitRate() float64 {
	q, h := e.c.PrefixQueries, e.c.PrefixHits
	if e.win.hasWindow {
		q, h = e.win.last.PrefixQueries, e.win.last.PrefixHits
	}
	if q == 0 {
		return 0
	}
	return float64(h) / float64(q)
}
