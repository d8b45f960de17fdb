package collector

import "github.com/goodput-exporter/goodput-exporter/snapshot"

// llamacppTable reads llama-server --metrics: counters and gauges without
// labels, one model per server. It has no latency histograms, no preemption
// (per-slot KV) and, since PR #13660 (2025-05), no KV-cache gauge; those
// signals stay absent for this engine.
var llamacppTable = newTable(table{
	engine: snapshot.LlamaCPP,
	sources: []*source{
		gauge(snapshot.Running, "llamacpp:requests_processing", aggSum),
		gauge(snapshot.Waiting, "llamacpp:requests_deferred", aggSum),
		gauge(snapshot.KVCacheUsage, "llamacpp:kv_cache_usage_ratio", aggMax),
		counter(snapshot.PromptTokens, "llamacpp:prompt_tokens_total", aggSum),
		counter(snapshot.GenerationTokens, "llamacpp:tokens_predicted_total", aggSum),
	},
}, nil)
