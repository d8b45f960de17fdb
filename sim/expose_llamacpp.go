package sim

import "strconv"

// llamacppText renders llama-server's /metrics as build b11669 does:
// counters and gauges only, no labels, every value printed as a C++ stream
// prints a double (6 significant digits). tokens_predicted_total moves
// when a request completes, by all its tokens, while n_decode_total
// counts every step; prompt_tokens_total counts the prompt tokens
// computed and prompt_tokens_cached_total those reused from the cache.
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
	one("llamacpp:prompt_tokens_total", "Number of prompt tokens processed, excluding cached tokens", "counter", float64(c.PromptComputed))
	one("llamacpp:prompt_tokens_cached_total", "Number of prompt tokens reused from the cache", "counter", float64(c.PromptCached))
	one("llamacpp:prompt_seconds_total", "Total time spent processing prompts", "counter", c.PrefillSeconds)
	one("llamacpp:tokens_predicted_total", "Number of generation tokens processed", "counter", float64(c.CompletedOutputTokens))
	one("llamacpp:tokens_predicted_seconds_total", "Total time spent generating tokens", "counter", c.DecodeSeconds)
	one("llamacpp:n_decode_total", "Total number of llama_decode() calls, excluding speculative decoding and multimodal decoding", "counter", float64(c.Steps))
	one("llamacpp:n_tokens_max", "Largest observed sequence length (prompt + generation)", "counter", float64(c.MaxSeqTokens))
	// Speculative decoding is off: b11669 still writes its counters, at 0.
	one("llamacpp:spec_decode_num_draft_tokens_total", "Speculative: Total draft tokens generated", "counter", 0)
	one("llamacpp:spec_decode_num_accepted_tokens_total", "Speculative: Total draft tokens accepted by the target model", "counter", 0)
	one("llamacpp:spec_decode_num_drafts_total", "Speculative: Total speculative decoding verification steps", "counter", 0)
	one("llamacpp:prompt_tokens_seconds", "Average prompt throughput in tokens/s", "gauge", promptRate)
	one("llamacpp:predicted_tokens_seconds", "Average generation throughput in tokens/s", "gauge", genRate)
	one("llamacpp:requests_processing", "Number of requests processing", "gauge", float64(len(e.running)))
	one("llamacpp:requests_deferred", "Number of requests deferred", "gauge", float64(e.waiting.len()))
	one("llamacpp:n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call", "gauge", busyPerDecode)
	return x.b.String()
}

// llamacppProcessStart is the Process-Start-Time-Unix header llama-server
// b11669 sends: despite its name, microseconds of the monotonic clock
// since boot when the process started, not Unix time. The simulated node
// booted 3,899.5 s (a value seen on a real server) before the default
// configuration's start (2026-01-01); an engine started later (a restart,
// or a server started from the clock) sends a larger token by the time
// between, as llama-server does, and engines started together differ by
// the seed's milliseconds.
func (e *Engine) llamacppProcessStart() string {
	const boot = 1767225600 - 3899.513466
	up := e.cfg.StartUnix - boot + float64(e.cfg.Seed%1000)/1000
	return strconv.FormatUint(uint64(max(up, 0)*1e6), 10)
}
