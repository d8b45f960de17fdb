package sim

// tritonText renders Triton Inference Server serving the model through
// tensorrtllm_backend: the backend's nv_trt_llm_* gauges and Triton's
// per-model nv_inference_* counters (durations as cumulative
// microseconds), with the opt-in first-response histogram in
// milliseconds. The model is "tensorrt_llm", version 1, as in the
// backend's examples.
func (e *Engine) tritonText() string {
	x := &expo{num: rustFloat, sortLabels: true}
	c := &e.c
	h := &e.h
	base := []label{{"model", "tensorrt_llm"}, {"version", "1"}}
	sel := func(k, v string) []label { return append(base[:2:2], label{k, v}) }
	var context int
	for _, r := range e.running {
		if r.generated == 0 {
			context++
		}
	}
	x.family("nv_trt_llm_request_metrics", "TRT LLM request metrics", "gauge")
	x.sample("nv_trt_llm_request_metrics", sel("request_type", "waiting"), float64(e.waiting.len()))
	x.sample("nv_trt_llm_request_metrics", sel("request_type", "context"), float64(context))
	x.sample("nv_trt_llm_request_metrics", sel("request_type", "scheduled"), float64(len(e.running)))
	x.sample("nv_trt_llm_request_metrics", sel("request_type", "max"), float64(e.cfg.Engine.MaxNumSeqs))
	x.sample("nv_trt_llm_request_metrics", sel("request_type", "active"), float64(len(e.running)))
	x.family("nv_trt_llm_kv_cache_block_metrics", "TRT LLM KV cache block metrics", "gauge")
	x.sample("nv_trt_llm_kv_cache_block_metrics", sel("kv_cache_block_type", "fraction"), e.kv.usage())
	x.sample("nv_trt_llm_kv_cache_block_metrics", sel("kv_cache_block_type", "tokens_per"), float64(e.kv.blockSize))
	x.sample("nv_trt_llm_kv_cache_block_metrics", sel("kv_cache_block_type", "used"), float64(e.kv.used))
	x.sample("nv_trt_llm_kv_cache_block_metrics", sel("kv_cache_block_type", "free"), float64(e.kv.capacity-e.kv.used))
	x.sample("nv_trt_llm_kv_cache_block_metrics", sel("kv_cache_block_type", "max"), float64(e.kv.capacity))
	x.family("nv_trt_llm_general_metrics", "General TRT LLM metrics", "gauge")
	x.sample("nv_trt_llm_general_metrics", sel("general_type", "iteration_counter"), float64(c.Steps))
	x.sample("nv_trt_llm_general_metrics", sel("general_type", "timestamp"), float64(int64(e.cfg.StartUnix+secs(e.now))))
	ok := c.Finished[reasonIndex(FinishStop)] + c.Finished[reasonIndex(FinishLength)] + c.Finished[reasonIndex(FinishRepetition)]
	x.family("nv_inference_request_success", "Number of successful inference requests, all batch sizes", "counter")
	x.sample("nv_inference_request_success", base, float64(ok))
	x.family("nv_inference_request_failure", "Number of failed inference requests, all batch sizes", "counter")
	x.sample("nv_inference_request_failure", sel("reason", "BACKEND"), float64(c.Finished[reasonIndex(FinishError)]))
	x.sample("nv_inference_request_failure", sel("reason", "CANCELED"), float64(c.Finished[reasonIndex(FinishAbort)]))
	x.family("nv_inference_count", "Number of inferences performed (does not include cached requests)", "counter")
	x.sample("nv_inference_count", base, float64(c.FinishedTotal()))
	x.family("nv_inference_exec_count", "Number of model executions performed (does not include cached requests)", "counter")
	x.sample("nv_inference_exec_count", base, float64(c.FinishedTotal()))
	us := func(name, help string, s float64) {
		x.family(name, help, "counter")
		x.sample(name, base, float64(int64(s*1e6)))
	}
	us("nv_inference_request_duration_us", "Cumulative inference request duration in microseconds (includes cached requests)", h.e2e.sum)
	us("nv_inference_queue_duration_us", "Cumulative inference queuing duration in microseconds (includes cached requests)", h.queue.sum)
	us("nv_inference_compute_infer_duration_us", "Cumulative compute inference duration in microseconds (does not include cached requests)", h.inference.sum)
	x.family("nv_inference_pending_request_count", "Instantaneous number of pending requests awaiting execution per-model.", "gauge")
	x.sample("nv_inference_pending_request_count", base, 0)
	x.family("nv_inference_first_response_histogram_ms", "Duration from request to first response in milliseconds", "histogram")
	x.histogram("nv_inference_first_response_histogram_ms", base, h.tritonTTFT)
	return x.b.String()
}
