package sim

import "strconv"

// rustFloat formats an f64 as Rust's Display does (shortest round-trip
// digits, never an exponent), as TGI's and Dynamo's Rust exporters print.
func rustFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// tgiText renders TGI v3's router metrics (metrics-exporter-prometheus):
// no model label, counters without _total, TGI's bucket bounds. Generated
// tokens are counted when a request succeeds; batch inference calls
// every step.
func (e *Engine) tgiText() string {
	x := &expo{num: rustFloat}
	c := &e.c
	h := &e.h
	one := func(name, help, typ string, v float64) {
		x.family(name, help, typ)
		x.sample(name, nil, v)
	}
	ok := c.Finished[reasonIndex(FinishStop)] + c.Finished[reasonIndex(FinishLength)] + c.Finished[reasonIndex(FinishRepetition)]
	one("tgi_request_count", "Total number of requests", "counter", float64(c.Arrived))
	one("tgi_request_success", "Number of successful requests", "counter", float64(ok))
	x.family("tgi_request_failure", "Number of failed requests", "counter")
	x.sample("tgi_request_failure", []label{{"err", "generation"}}, float64(c.Finished[reasonIndex(FinishError)]))
	x.sample("tgi_request_failure", []label{{"err", "dropped"}}, float64(c.Finished[reasonIndex(FinishAbort)]))
	hist := func(name, help string, hh *hist) {
		x.family(name, help, "histogram")
		x.histogram(name, nil, hh)
	}
	hist("tgi_request_duration", "Total time spent processing the request", h.tgiE2E)
	hist("tgi_request_queue_duration", "Time spent in the queue per request", h.tgiQueue)
	hist("tgi_request_inference_duration", "Request inference duration", h.tgiInference)
	hist("tgi_request_mean_time_per_token_duration", "Mean time per token per request", h.tgiMeanTPT)
	hist("tgi_request_generated_tokens", "Generated tokens per request", h.tgiGenToks)
	hist("tgi_request_input_length", "Input token length per request", h.tgiInput)
	one("tgi_queue_size", "Current queue size", "gauge", float64(e.waiting.len()))
	one("tgi_batch_current_size", "Current batch size", "gauge", float64(len(e.running)))
	one("tgi_batch_current_max_tokens", "Maximum tokens for the current batch", "gauge", float64(e.kv.used*e.kv.blockSize))
	one("tgi_batch_max_total_tokens", "Maximum amount of tokens in total", "gauge", float64(e.kv.capacity*e.kv.blockSize))
	x.family("tgi_batch_inference_count", "Inference calls per method (prefill or decode)", "counter")
	x.sample("tgi_batch_inference_count", []label{{"method", "prefill"}}, float64(c.PrefillSteps))
	x.sample("tgi_batch_inference_count", []label{{"method", "decode"}}, float64(c.Steps-c.PrefillSteps))
	return x.b.String()
}
