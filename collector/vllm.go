package collector

import "github.com/goodput-exporter/goodput-exporter/snapshot"

// vllmTable reads vLLM V1 and V0. Renamed families are listed newest
// first, so a version that emits both spellings (0.9 to 0.10 emit
// kv_cache_usage_perc and the deprecated gpu_cache_usage_perc) is read once.
// Data-parallel ranks (label engine) are independent engines behind one
// frontend: counts add, the KV-cache ratio takes the fullest rank, since
// that is the one that preempts.
var vllmTable = newTable(table{
	engine:       snapshot.VLLM,
	modelLabels:  []string{"model_name"},
	reasonLabels: []string{"finished_reason", "finish_reason"}, // the latter: llm-d-inference-sim
	sources: []*source{
		gauge(snapshot.Running, "vllm:num_requests_running", aggSum),
		gauge(snapshot.Waiting, "vllm:num_requests_waiting", aggSum),
		gauge(snapshot.KVCacheUsage, "vllm:kv_cache_usage_perc", aggMax),
		gauge(snapshot.KVCacheUsage, "vllm:gpu_cache_usage_perc", aggMax),
		{family: "vllm:gpu_prefix_cache_hit_rate", kind: kindGauge, field: int(snapshot.PrefixCacheHitRatio), agg: aggMax, negativeAbsent: true},
		counter(snapshot.Preemptions, "vllm:num_preemptions_total", aggSum),
		counter(snapshot.PromptTokens, "vllm:prompt_tokens_total", aggSum),
		counter(snapshot.GenerationTokens, "vllm:generation_tokens_total", aggSum),
		counter(snapshot.PrefixCacheQueries, "vllm:prefix_cache_queries_total", aggSum),
		counter(snapshot.PrefixCacheQueries, "vllm:gpu_prefix_cache_queries_total", aggSum),
		counter(snapshot.PrefixCacheHits, "vllm:prefix_cache_hits_total", aggSum),
		counter(snapshot.PrefixCacheHits, "vllm:gpu_prefix_cache_hits_total", aggSum),
		finished("vllm:request_success_total", aggSum),
		hist(snapshot.TTFT, "vllm:time_to_first_token_seconds", aggSum),
		hist(snapshot.ITL, "vllm:inter_token_latency_seconds", aggSum),
		hist(snapshot.ITL, "vllm:time_per_output_token_seconds", aggSum),
		hist(snapshot.TPOT, "vllm:request_time_per_output_token_seconds", aggSum),
		hist(snapshot.E2E, "vllm:e2e_request_latency_seconds", aggSum),
		hist(snapshot.QueueTime, "vllm:request_queue_time_seconds", aggSum),
		hist(snapshot.QueueTime, "vllm:time_in_queue_requests", aggSum),
		// One observation per finished request, whatever the reason, in the
		// same loop that observes e2e (loggers.py); 1-2-5 buckets up to
		// max_model_len.
		hist(snapshot.OutputTokens, "vllm:request_generation_tokens", aggSum),
	},
}, nil)
