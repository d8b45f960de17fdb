package sim

// dynamoText renders Dynamo's HTTP frontend (Rust prometheus crate):
// label model, log-spaced bucket bounds. In flight is every request the
// frontend holds; queued those without their first token yet. Output
// tokens are counted as they stream.
func (e *Engine) dynamoText() string {
	x := &expo{num: rustFloat, sortLabels: true}
	c := &e.c
	h := &e.h
	base := []label{{"model", e.cfg.Model.Name}}
	one := func(name, help, typ string, v float64) {
		x.family(name, help, typ)
		x.sample(name, base, v)
	}
	queued := e.waiting.len()
	for _, r := range e.running {
		if r.generated == 0 {
			queued++
		}
	}
	inflight := float64(len(e.running) + e.waiting.len())
	one("dynamo_frontend_active_requests", "Number of requests currently being handled by the frontend, from HTTP handler entry to response completion", "gauge", inflight)
	one("dynamo_frontend_inflight_requests", "Number of inflight requests", "gauge", inflight)
	one("dynamo_frontend_queued_requests", "Number of requests in HTTP processing queue", "gauge", float64(queued))
	hist := func(name, help string, hh *hist) {
		x.family(name, help, "histogram")
		x.histogram(name, base, hh)
	}
	hist("dynamo_frontend_cached_tokens", "Number of cached tokens (prefix cache hits) per request", h.dynCached)
	hist("dynamo_frontend_input_sequence_tokens", "Input sequence length in tokens", h.dynISL)
	hist("dynamo_frontend_inter_token_latency_seconds", "Inter-token latency in seconds", h.dynITL)
	hist("dynamo_frontend_output_sequence_tokens", "Output sequence length in tokens", h.dynOSL)
	one("dynamo_frontend_output_tokens_total", "Total number of output tokens generated (updates in real-time)", "counter", float64(c.GenerationTokens))
	hist("dynamo_frontend_request_duration_seconds", "Duration of LLM requests", h.dynE2E)
	x.family("dynamo_frontend_requests_total", "Total number of LLM requests processed", "counter")
	req := func(status, errType string, v uint64) {
		x.sample("dynamo_frontend_requests_total", append(base[:1:1], label{"endpoint", "chat_completions"}, label{"error_type", errType},
			label{"request_type", "stream"}, label{"status", status}), float64(v))
	}
	ok := c.Finished[reasonIndex(FinishStop)] + c.Finished[reasonIndex(FinishLength)] + c.Finished[reasonIndex(FinishRepetition)]
	req("success", "none", ok)
	req("error", "cancelled", c.Finished[reasonIndex(FinishAbort)])
	req("error", "internal", c.Finished[reasonIndex(FinishError)])
	hist("dynamo_frontend_time_to_first_token_seconds", "Time to first token in seconds", h.dynTTFT)
	return x.b.String()
}
