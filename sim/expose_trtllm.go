package sim

// trtllmText renders trtllm-serve's /prometheus/metrics (TensorRT-LLM's
// MetricsCollector, prometheus_client): per-request families logged when
// a request finishes, so tokens are counted at completion, and the
// executor's iteration state. vLLM's bucket bounds.
func (e *Engine) trtllmText() string {
	x := &expo{num: pyFloat, sortLabels: true}
	c := &e.c
	h := &e.h
	base := []label{{"engine_type", "trtllm"}, {"model_name", e.cfg.Model.Name}}
	one := func(name, help, typ string, v float64) {
		x.family(name, help, typ)
		x.sample(name, base, v)
	}
	x.family("trtllm_request_success_total", "Count of successfully processed requests.", "counter")
	for i, r := range FinishReasons {
		x.sample("trtllm_request_success_total", append(base[:2:2], label{"finished_reason", string(r)}), float64(c.Finished[i]))
	}
	hist := func(name, help string, hh *hist) {
		x.family(name, help, "histogram")
		x.histogram(name, base, hh)
	}
	hist("trtllm_e2e_request_latency_seconds", "Histogram of end to end request latency in seconds.", h.e2e)
	hist("trtllm_time_to_first_token_seconds", "Histogram of time to first token in seconds.", h.ttft)
	hist("trtllm_time_per_output_token_seconds", "Histogram of time per output token in seconds.", h.tpot)
	hist("trtllm_request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", h.queue)
	one("trtllm_prompt_tokens_total", "Cumulative number of prompt (input) tokens processed.", "counter", float64(c.CompletedPromptTokens))
	one("trtllm_generation_tokens_total", "Cumulative number of generation (output) tokens produced.", "counter", float64(c.CompletedOutputTokens))
	one("trtllm_prompt_cached_tokens_total", "Process-lifetime total prompt tokens served from KV cache. Resets only when the serving process restarts, not when the KV cache is flushed or evicted.", "counter", float64(c.CompletedCachedTokens))
	one("trtllm_kv_cache_utilization", "KV cache utilization", "gauge", e.kv.usage())
	one("trtllm_num_requests_running", "Number of active requests", "gauge", float64(len(e.running)))
	one("trtllm_num_requests_waiting", "Number of queued requests", "gauge", float64(e.waiting.len()))
	one("trtllm_num_requests_completed_total", "Total number of completed requests across iterations", "counter", float64(c.FinishedTotal()))
	one("trtllm_kv_cache_max_blocks", "Maximum number of KV cache blocks", "gauge", float64(e.kv.capacity))
	one("trtllm_kv_cache_used_blocks", "Number of used KV cache blocks", "gauge", float64(e.kv.used))
	return x.b.String()
}
