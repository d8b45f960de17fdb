package collector

import "github.com/goodput-exporter/goodput-exporter/snapshot"

// sglangTable reads SGLang from v0.3 (label name) to current (label
// model_name). Scheduler series carry tp_rank, pp_rank, moe_ep_rank and
// engine_type: they describe one scheduler seen from each rank, so series
// that differ only there are combined by maximum, never summed. Retraction
// (SGLang's word for preemption under KV pressure) feeds the preemption
// counter. The smg sidecar re-exports the same families as sglang_*.
var sglangTable = newTable(table{
	engine:      snapshot.SGLang,
	modelLabels: []string{"model_name", "name"},
	sources: []*source{
		gauge(snapshot.Running, "sglang:num_running_reqs", aggMax),
		gauge(snapshot.Waiting, "sglang:num_queue_reqs", aggMax),
		gauge(snapshot.KVCacheUsage, "sglang:token_usage", aggMax),
		gauge(snapshot.PrefixCacheHitRatio, "sglang:cache_hit_rate", aggMax),
		counter(snapshot.Preemptions, "sglang:num_retracted_requests_total", aggMax),
		counter(snapshot.PromptTokens, "sglang:prompt_tokens_total", aggMax),
		counter(snapshot.GenerationTokens, "sglang:generation_tokens_total", aggMax),
		counter(snapshot.PrefixCacheHits, "sglang:cached_tokens_total", aggMax),
		hist(snapshot.TTFT, "sglang:time_to_first_token_seconds", aggMax),
		hist(snapshot.ITL, "sglang:inter_token_latency_seconds", aggMax),
		hist(snapshot.ITL, "sglang:time_per_output_token_seconds", aggMax),
		hist(snapshot.E2E, "sglang:e2e_request_latency_seconds", aggMax),
		hist(snapshot.QueueTime, "sglang:queue_time_seconds", aggMax),
		// Only with --collect-tokens-histogram: observed once per finished
		// request, in the call that adds its tokens to
		// generation_tokens_total (TokenizerMetricsCollector).
		hist(snapshot.OutputTokens, "sglang:generation_tokens_histogram", aggMax),
	},
	post:    sglangPrefixQueries,
	derived: []derived{{kindCounter, int(snapshot.PrefixCacheQueries), "sglang:prompt_tokens_total (with cached_tokens_total)"}},
}, map[string][]string{"sglang:": {"sglang_"}})

// sglangPrefixQueries: SGLang counts cached prompt tokens
// (cached_tokens_total) against all prompt tokens, which is what vLLM calls
// prefix-cache hits and queries.
func sglangPrefixQueries(m *snapshot.Model, _ func(string) (float64, bool)) {
	if m.Counters[snapshot.PrefixCacheHits].OK && m.Counters[snapshot.PromptTokens].OK {
		m.Counters[snapshot.PrefixCacheQueries] = m.Counters[snapshot.PromptTokens]
	}
}
