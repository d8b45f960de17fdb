package collector

import "github.com/goodput-exporter/goodput-exporter/snapshot"

// tgiTable reads Hugging Face text-generation-inference v2 and v3 (the
// router's metrics, router/src/server.rs, infer/mod.rs, validation.rs and
// backends/v3/src: queue.rs, backend.rs). They are rendered by the Rust
// metrics-exporter-prometheus crate: no model label (one model per
// server), counters without a _total suffix, histograms with TGI's own
// bucket bounds (every *_duration: 35 geometric bounds 0.0001·1.5^k;
// token histograms: 100 linear bounds up to the token limits).
//
// Mapping, and what TGI lacks:
//   - running: tgi_batch_current_size; waiting: tgi_queue_size.
//   - KV usage: none as such. v3 reserves each batch's token budget
//     (tgi_batch_current_max_tokens) out of the KV capacity
//     (tgi_batch_max_total_tokens); their ratio is the reserved share, an
//     upper bound on the share in use, and is what admits or holds back
//     requests.
//   - prompt tokens: tgi_request_input_length_sum (observed at
//     validation, per request); generation tokens:
//     tgi_request_generated_tokens_sum (observed when a request succeeds:
//     tokens are counted at completion, so a long generation adds nothing
//     until it ends; tgi_batch_inference_count, one per prefill or decode
//     call, shows the engine stepping meanwhile).
//   - no TTFT or per-token histogram (issue #2887); the per-request mean
//     time per token includes the prefill step (inference time / generated
//     tokens), read as TPOT; e2e and queue histograms are exact.
//   - finished: tgi_request_success, and tgi_request_failure by err:
//     generation and incomplete are errors, dropped is the client gone
//     (abort), overloaded a request the server refused (error); validation
//     and template are refused before they run and are not counted, as
//     vLLM never counts them.
//   - no preemption counter (v3 evicts nothing mid-generation), no
//     prefix-cache counter, no process start time.
var tgiTable = newTable(table{
	engine:       snapshot.TGI,
	reasonLabels: []string{"err"},
	reasonOf:     tgiReason,
	sources: []*source{
		gauge(snapshot.Running, "tgi_batch_current_size", aggSum),
		gauge(snapshot.Waiting, "tgi_queue_size", aggSum),
		aux("tgi_batch_current_max_tokens", aggSum),
		aux("tgi_batch_max_total_tokens", aggSum),
		counter(snapshot.PromptTokens, "tgi_request_input_length_sum", aggSum),
		counter(snapshot.EngineSteps, "tgi_batch_inference_count", aggSum),
		finishedAs("tgi_request_success", "success", aggSum),
		finishedAs("tgi_request_failure", "error", aggSum),
		hist(snapshot.TPOT, "tgi_request_mean_time_per_token_duration", aggSum),
		hist(snapshot.E2E, "tgi_request_duration", aggSum),
		hist(snapshot.QueueTime, "tgi_request_queue_duration", aggSum),
		hist(snapshot.OutputTokens, "tgi_request_generated_tokens", aggSum),
	},
	post: tgiPost,
	derived: []derived{
		{kindGauge, int(snapshot.KVCacheUsage), "tgi_batch_current_max_tokens / tgi_batch_max_total_tokens (reserved share)"},
		{kindCounter, int(snapshot.GenerationTokens), "tgi_request_generated_tokens_sum"},
	},
}, nil)

func tgiReason(fixed string, get func(string) string) (string, bool) {
	switch get("err") {
	case "":
		return fixed, true
	case "generation", "incomplete", "overloaded":
		return "error", true
	case "dropped":
		return "abort", true
	case "validation", "template":
		return "", false
	default:
		return "error", true
	}
}

// tgiPost derives the KV share the running batch reserves, and the
// generation tokens from the per-request histogram's sum.
func tgiPost(m *snapshot.Model, aux func(string) (float64, bool)) {
	if h := m.Hists[snapshot.OutputTokens]; h != nil && h.Sum >= 0 {
		m.Counters[snapshot.GenerationTokens] = snapshot.Value{V: h.Sum, OK: true}
	}
	m.CounterFailed[snapshot.GenerationTokens] = m.HistFailed[snapshot.OutputTokens]
	used, ok1 := aux("tgi_batch_current_max_tokens")
	capacity, ok2 := aux("tgi_batch_max_total_tokens")
	if ok1 && ok2 && capacity > 0 && used >= 0 {
		m.Gauges[snapshot.KVCacheUsage] = snapshot.Value{V: min(1, used/capacity), OK: true}
	}
}
