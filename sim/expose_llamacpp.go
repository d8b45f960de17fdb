package sim

// llamacppText renders llama-server's /metrics: counters and gauges
// only, no labels, every value printed as a C++ stream prints a double.
// The throughput gauges cover the last log interval.
func (e *Engine) llamacppText() string {
	x := &expo{num: cppFloat}
	c := &e.c
	one := func(name, help, typ string, v float64) {
		x.family(name, help, typ)
		x.sample(name, nil, v)
	}
	var busyPerDecode, promptRate, genRate float64
	if c.Steps > 0 {
		busyPerDecode = float64(c.StepSeqs) / float64(c.Steps)
	}
	w := c
	if e.win.hasWindow {
		w = &e.win.last
	}
	if w.PrefillSeconds > 0 {
		promptRate = float64(w.PromptComputed) / w.PrefillSeconds
	}
	if w.DecodeSeconds > 0 {
		genRate = float64(w.GenerationTokens) / w.DecodeSeconds
	}
	one("llamacpp:prompt_tokens_total", "Number of prompt tokens processed.", "counter", float64(c.PromptComputed))
	one("llamacpp:prompt_seconds_total", "Prompt process time", "counter", c.PrefillSeconds)
	one("llamacpp:tokens_predicted_total", "Number of generation tokens processed.", "counter", float64(c.GenerationTokens))
	one("llamacpp:tokens_predicted_seconds_total", "Predict process time", "counter", c.DecodeSeconds)
	one("llamacpp:n_decode_total", "Total number of llama_decode() calls", "counter", float64(c.Steps))
	one("llamacpp:n_tokens_max", "Largest observed n_tokens.", "counter", float64(c.MaxSeqTokens))
	one("llamacpp:n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call", "counter", busyPerDecode)
	one("llamacpp:prompt_tokens_seconds", "Average prompt throughput in tokens/s.", "gauge", promptRate)
	one("llamacpp:predicted_tokens_seconds", "Average generation throughput in tokens/s.", "gauge", genRate)
	one("llamacpp:requests_processing", "Number of requests processing.", "gauge", float64(len(e.running)))
	one("llamacpp:requests_deferred", "Number of requests deferred.", "gauge", float64(e.waiting.len()))
	return x.b.String()
}
