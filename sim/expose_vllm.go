package sim

import "strconv"

// vllmText renders the vLLM V1 metric families (loggers.py), in the
// order and with the HELP texts vLLM uses.
func (e *Engine) vllmText() string {
	x := &expo{num: pyFloat, sortLabels: true}
	c := &e.c
	base := []label{{"engine", e.cfg.Engine.EngineIndex}, {"model_name", e.cfg.Model.Name}}
	with := func(k, v string) []label { return append(base[:2:2], label{k, v}) }
	gauge := func(name, help string, v float64) {
		x.family(name, help, "gauge")
		x.sample(name, base, v)
	}
	counter := func(name, help string, v uint64) {
		x.family(name, help, "counter")
		x.sample(name, base, float64(v))
	}

	x.family("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", "gauge")
	x.sample("process_start_time_seconds", nil, e.cfg.StartUnix)

	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", float64(len(e.running)))
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", float64(e.waiting.len()))
	x.family("vllm:num_requests_waiting_by_reason", "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.", "gauge")
	x.sample("vllm:num_requests_waiting_by_reason", with("reason", "capacity"), float64(e.waiting.len()))
	x.sample("vllm:num_requests_waiting_by_reason", with("reason", "deferred"), 0)
	x.family("vllm:engine_sleep_state", "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.", "gauge")
	x.sample("vllm:engine_sleep_state", with("sleep_state", "awake"), 1)
	x.sample("vllm:engine_sleep_state", with("sleep_state", "weights_offloaded"), 0)
	x.sample("vllm:engine_sleep_state", with("sleep_state", "discard_all"), 0)
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", e.kv.usage())
	counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", c.PrefixQueries)
	counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", c.PrefixHits)
	counter("vllm:external_prefix_cache_queries_total", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.", 0)
	counter("vllm:external_prefix_cache_hits_total", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.", 0)
	counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", c.Preemptions)
	counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", c.PromptTokens)
	x.family("vllm:prompt_tokens_by_source_total", "Number of prompt tokens by source.", "counter")
	x.sample("vllm:prompt_tokens_by_source_total", with("source", "local_compute"), float64(c.PromptComputed))
	x.sample("vllm:prompt_tokens_by_source_total", with("source", "local_cache_hit"), float64(c.PromptCached))
	x.sample("vllm:prompt_tokens_by_source_total", with("source", "external_kv_transfer"), 0)
	counter("vllm:prompt_tokens_cached_total", "Number of cached prompt tokens (local + external).", c.PromptCached)
	counter("vllm:prompt_tokens_recomputed_total", "Number of cached tokens recomputed for forward pass.", c.RecomputedTokens)
	counter("vllm:generation_tokens_total", "Number of generation tokens processed.", c.GenerationTokens)
	x.family("vllm:request_success_total", "Count of successfully processed requests.", "counter")
	for i, r := range FinishReasons {
		x.sample("vllm:request_success_total", with("finished_reason", string(r)), float64(c.Finished[i]))
	}

	h := &e.h
	hist := func(name, help string, hh *hist) {
		x.family(name, help, "histogram")
		x.histogram(name, base, hh)
	}
	hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", h.promptToks)
	hist("vllm:request_generation_tokens", "Number of generation tokens processed.", h.genToks)
	hist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", h.iterTokens)
	hist("vllm:request_max_num_generation_tokens", "Histogram of maximum number of requested generation tokens.", h.maxGen)
	hist("vllm:request_params_n", "Histogram of the n request parameter.", h.paramsN)
	hist("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", h.paramsMax)
	hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", h.ttft)
	hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", h.itl)
	hist("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", h.tpot)
	hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", h.e2e)
	hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", h.queue)
	hist("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", h.inference)
	hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", h.prefill)
	hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", h.decode)
	hist("vllm:request_prefill_kv_computed_tokens", "Histogram of new KV tokens computed during prefill (excluding cached tokens).", h.kvComputed)
	hist("vllm:request_num_preemptions", "Number of preemptions per finished request.", h.numPreempt)

	eng := &e.cfg.Engine
	x.family("vllm:cache_config_info", "Information of the LLMEngine CacheConfig", "gauge")
	x.sample("vllm:cache_config_info", []label{
		{"block_size", strconv.Itoa(eng.BlockSize)}, {"cache_dtype", "auto"},
		{"enable_prefix_caching", pyBool(eng.PrefixCaching)}, {"engine", eng.EngineIndex},
		{"gpu_memory_utilization", pyFloat(eng.GPUMemoryUtilization)},
		{"num_cpu_blocks", "None"}, {"num_gpu_blocks", strconv.Itoa(e.kv.capacity)},
		{"num_gpu_blocks_override", "None"}, {"prefix_caching_hash_algo", "sha256"}, {"sliding_window", "None"},
	}, 1)
	return x.b.String()
}
