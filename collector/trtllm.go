package collector

import "github.com/goodput-exporter/goodput-exporter/snapshot"

// trtllmTable reads trtllm-serve, TensorRT-LLM's OpenAI server
// (tensorrt_llm/metrics/collector.py, MetricsCollector, served on
// /prometheus/metrics): prometheus_client families prefixed trtllm_,
// labels model_name and engine_type, vLLM's bucket bounds. Requests are
// logged when they finish (return_perf_metrics), the engine state every
// iteration (enable_iter_perf_stats). Versions around 1.1 wrote the five
// per-request families without the prefix (Dynamo added trtllm_); with
// engine: trtllm forced those are read too, and Dynamo workers' trtllm:
// spelling likewise.
//
// Mapping, and what it lacks:
//   - running/waiting: trtllm_num_requests_running / _waiting (the
//     executor's active and queued requests); KV usage:
//     trtllm_kv_cache_utilization (used / max blocks).
//   - prompt and generation tokens: trtllm_prompt_tokens_total and
//     trtllm_generation_tokens_total, both counted when a request
//     finishes; prefix cache: trtllm_prompt_cached_tokens_total against
//     all prompt tokens.
//   - finished: trtllm_request_success_total by finished_reason.
//   - TTFT, per-request TPOT (trtllm_time_per_output_token_seconds is
//     observed once per finished request), e2e and queue histograms.
//   - no per-token histogram, no per-request output length, no
//     preemption counter (paused requests are a gauge), no step counter:
//     a long generation adds no token until it ends.
var trtllmTable = newTable(table{
	engine:       snapshot.TRTLLM,
	modelLabels:  []string{"model_name"},
	reasonLabels: []string{"finished_reason"},
	sources: []*source{
		gauge(snapshot.Running, "trtllm_num_requests_running", aggSum),
		gauge(snapshot.Waiting, "trtllm_num_requests_waiting", aggSum),
		gauge(snapshot.KVCacheUsage, "trtllm_kv_cache_utilization", aggMax),
		counter(snapshot.PromptTokens, "trtllm_prompt_tokens_total", aggSum),
		counter(snapshot.GenerationTokens, "trtllm_generation_tokens_total", aggSum),
		counter(snapshot.PrefixCacheHits, "trtllm_prompt_cached_tokens_total", aggSum),
		finished("trtllm_request_success_total", aggSum),
		hist(snapshot.TTFT, "trtllm_time_to_first_token_seconds", aggSum),
		hist(snapshot.TPOT, "trtllm_time_per_output_token_seconds", aggSum),
		hist(snapshot.E2E, "trtllm_e2e_request_latency_seconds", aggSum),
		hist(snapshot.QueueTime, "trtllm_request_queue_time_seconds", aggSum),
	},
	post:    trtllmPrefixQueries,
	derived: []derived{{kindCounter, int(snapshot.PrefixCacheQueries), "trtllm_prompt_tokens_total (with prompt_cached_tokens_total)"}},
}, map[string][]string{"trtllm_": {"trtllm:", ""}})

// trtllmPrefixQueries: cached prompt tokens are counted against all
// prompt tokens of the same finished requests.
func trtllmPrefixQueries(m *snapshot.Model, _ func(string) (float64, bool)) {
	if m.Counters[snapshot.PrefixCacheHits].OK && m.Counters[snapshot.PromptTokens].OK {
		m.Counters[snapshot.PrefixCacheQueries] = m.Counters[snapshot.PromptTokens]
	}
}
