package collector

import "github.com/goodput-exporter/goodput-exporter/snapshot"

// tritonTable reads Triton Inference Server serving a TensorRT-LLM model
// through tensorrtllm_backend (README "Triton Metrics";
// inflight_batcher_llm custom metrics) and Triton's own per-model
// nv_inference_* families. Every series carries model and version; the
// versions of one model are added. The nv_trt_llm_* families are gauges
// with one selector label each.
//
// Mapping, and what Triton lacks:
//   - running: nv_trt_llm_request_metrics{request_type="active"};
//     waiting: request_type="waiting" (the executor's queue), else
//     nv_inference_pending_request_count (Triton's scheduler queue in front
//     of the backend).
//   - KV usage: nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction"}.
//   - engine steps: nv_trt_llm_general_metrics{general_type="iteration_counter"}
//     (a gauge that counts executor iterations).
//   - finished: nv_inference_request_success ("success") and
//     nv_inference_request_failure (by reason where Triton gives one:
//     CANCELED is an abort, the rest errors).
//   - TTFT: only with --metrics-config histogram_latencies=true, as
//     nv_inference_first_response_histogram_ms (milliseconds, read as
//     seconds here): for a decoupled (streaming) model the first response
//     is the first token.
//   - no token counters: total_context_tokens and the v1
//     total_generation_tokens are per-iteration gauges, not running
//     totals. No preemption counter, no prefix-cache counter, no per-token
//     or e2e or queue histogram: nv_inference_request_duration_us and
//     nv_inference_queue_duration_us are cumulative microsecond counters,
//     which give the mean duration over a window (Δduration / Δrequests)
//     and nothing about its spread, so no percentile objective can be
//     judged from them.
var tritonTable = newTable(table{
	engine:       snapshot.Triton,
	modelLabels:  []string{"model"},
	reasonLabels: []string{"reason"},
	reasonOf:     tritonReason,
	sources: []*source{
		where(gauge(snapshot.Running, "nv_trt_llm_request_metrics", aggSum), "request_type", "active"),
		where(gauge(snapshot.Waiting, "nv_trt_llm_request_metrics", aggSum), "request_type", "waiting"),
		gauge(snapshot.Waiting, "nv_inference_pending_request_count", aggSum),
		where(gauge(snapshot.KVCacheUsage, "nv_trt_llm_kv_cache_block_metrics", aggMax), "kv_cache_block_type", "fraction"),
		where(counter(snapshot.EngineSteps, "nv_trt_llm_general_metrics", aggSum), "general_type", "iteration_counter"),
		finishedAs("nv_inference_request_success", "success", aggSum),
		finishedAs("nv_inference_request_failure", "error", aggSum),
		{family: "nv_inference_first_response_histogram_ms", kind: kindHist, field: int(snapshot.TTFT), agg: aggSum, scale: 0.001},
	},
}, nil)

func tritonReason(fixed string, get func(string) string) (string, bool) {
	switch get("reason") {
	case "":
		return fixed, true
	case "CANCELED":
		return "abort", true
	default:
		return "error", true
	}
}
