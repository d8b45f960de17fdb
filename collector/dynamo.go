package collector

import "github.com/goodput-exporter/goodput-exporter/snapshot"

// dynamoTable reads NVIDIA Dynamo's HTTP frontend
// (lib/llm/src/http/service/metrics.rs; names in
// lib/runtime/src/metrics/prometheus_names.rs): Rust prometheus crate
// families prefixed dynamo_frontend_ (nv_llm_http_service_ where
// DYN_METRICS_PREFIX keeps the older NIM name), label model. Histograms
// have log-spaced bounds rounded to two significant figures, starting at
// 0 (TTFT 0.001–480 s in 18, ITL 0.001–2 s in 13, request duration
// 1–512 s in 10, output length 50–32000 tokens in 10), unless
// DYN_METRICS_* changes them.
//
// The frontend sees requests, not the engine: it has no KV cache, no
// preemption and no engine step. Its workers (vLLM, SGLang, TRT-LLM)
// publish those on their own /metrics; scrape them as targets of their
// own engine.
//
// Mapping:
//   - waiting: dynamo_frontend_queued_requests, requests that have not
//     had their first token yet (queued or in prefill); running: the
//     in-flight requests (active_requests, else the older
//     inflight_requests) less those, the ones generating.
//   - prompt tokens: dynamo_frontend_input_sequence_tokens_sum;
//     generation tokens: dynamo_frontend_output_tokens_total (updated as
//     tokens stream); prefix cache: dynamo_frontend_cached_tokens_sum,
//     the worker-reported cached prompt tokens, against the prompt tokens.
//   - finished: dynamo_frontend_requests_total by status and error_type:
//     cancelled is an abort, validation, not_found and not_implemented
//     are refused before they run (not counted), other errors are errors;
//     a series with no status (and no error type, or "none") is unknown:
//     finished, but neither a success nor an error.
//   - TTFT, per-token ITL, e2e (request_duration_seconds) and per-request
//     output length histograms; no queue-time histogram and no
//     per-request TPOT.
var dynamoTable = newTable(table{
	engine:      snapshot.Dynamo,
	modelLabels: []string{"model"},
	reasonOf:    dynamoReason,
	sources: []*source{
		aux("dynamo_frontend_active_requests", aggSum),
		aux("dynamo_frontend_inflight_requests", aggSum),
		gauge(snapshot.Waiting, "dynamo_frontend_queued_requests", aggSum),
		counter(snapshot.PromptTokens, "dynamo_frontend_input_sequence_tokens_sum", aggSum),
		counter(snapshot.GenerationTokens, "dynamo_frontend_output_tokens_total", aggSum),
		counter(snapshot.PrefixCacheHits, "dynamo_frontend_cached_tokens_sum", aggSum),
		finished("dynamo_frontend_requests_total", aggSum),
		hist(snapshot.TTFT, "dynamo_frontend_time_to_first_token_seconds", aggSum),
		hist(snapshot.ITL, "dynamo_frontend_inter_token_latency_seconds", aggSum),
		hist(snapshot.E2E, "dynamo_frontend_request_duration_seconds", aggSum),
		hist(snapshot.OutputTokens, "dynamo_frontend_output_sequence_tokens", aggSum),
	},
	post: dynamoPost,
	derived: []derived{
		{kindGauge, int(snapshot.Running), "dynamo_frontend_active_requests (else inflight_requests) − queued_requests"},
		{kindCounter, int(snapshot.PrefixCacheQueries), "dynamo_frontend_input_sequence_tokens_sum (with cached_tokens_sum)"},
	},
}, map[string][]string{"dynamo_frontend_": {"nv_llm_http_service_"}})

// reasonUnknown is the finish reason of a Dynamo request whose series
// says neither success nor an error: counted as finished, neither good
// nor failed by the error objective.
const reasonUnknown = "unknown"

func dynamoReason(_ string, get func(string) string) (string, bool) {
	status, errType := get("status"), get("error_type")
	if status == "success" {
		return "success", true
	}
	switch errType {
	case "cancelled":
		return "abort", true
	case "validation", "not_found", "not_implemented":
		return "", false
	}
	if status == "" && (errType == "" || errType == "none") {
		return reasonUnknown, true
	}
	return "error", true
}

func dynamoPost(m *snapshot.Model, aux func(string) (float64, bool)) {
	inflight, ok := aux("dynamo_frontend_active_requests")
	if !ok {
		inflight, ok = aux("dynamo_frontend_inflight_requests")
	}
	if w := m.Gauges[snapshot.Waiting]; ok && w.OK {
		m.Gauges[snapshot.Running] = snapshot.Value{V: max(0, inflight-w.V), OK: true}
	}
	if m.Counters[snapshot.PrefixCacheHits].OK && m.Counters[snapshot.PromptTokens].OK {
		m.Counters[snapshot.PrefixCacheQueries] = m.Counters[snapshot.PromptTokens]
	}
}
