package collector

import (
	"math"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// llamacppTable reads llama-server --metrics: counters and gauges without
// labels, one model per server, values printed with 6 significant digits
// (1.24492e+06), so large counters move in steps of 10, 100, 1,000. It has
// no latency histograms, no preemption (per-slot KV) and, since PR #13660
// (2025-05), no KV-cache gauge; those signals stay absent for this engine.
//
// Builds as of b11669 count tokens_predicted_total when a request
// completes, while n_decode_total (llama_decode calls) rises every step:
// the step counter is what shows a long generation is alive.
// prompt_tokens_total counts only the prompt tokens computed;
// prompt_tokens_cached_total (where present) those reused from the slot's
// cache. llm_prompt_tokens_total means all prompt tokens on every engine,
// so here it is their sum, and the cached ones are prefix-cache hits out
// of it.
var llamacppTable = newTable(table{
	engine: snapshot.LlamaCPP,
	sources: []*source{
		gauge(snapshot.Running, "llamacpp:requests_processing", aggSum),
		gauge(snapshot.Waiting, "llamacpp:requests_deferred", aggSum),
		gauge(snapshot.KVCacheUsage, "llamacpp:kv_cache_usage_ratio", aggMax).gone("llama.cpp PR #13660 (2025-05)"),
		counter(snapshot.PromptTokens, "llamacpp:prompt_tokens_total", aggSum),
		counter(snapshot.GenerationTokens, "llamacpp:tokens_predicted_total", aggSum),
		counter(snapshot.PrefixCacheHits, "llamacpp:prompt_tokens_cached_total", aggSum),
		counter(snapshot.EngineSteps, "llamacpp:n_decode_total", aggSum),
		aux("llamacpp:tokens_predicted_seconds_total", aggSum),
		aux("llamacpp:prompt_seconds_total", aggSum),
	},
	post:    llamacppPrompt,
	derived: []derived{{kindCounter, int(snapshot.PrefixCacheQueries), "llamacpp:prompt_tokens_total + prompt_tokens_cached_total"}},
}, nil)

// llamacppPrompt makes the prompt tokens all prompt tokens, computed and
// cached, and the prefix-cache queries the same count. When the cached
// counter is present but unusable, the prompt tokens are left out too:
// without it they would fall to the computed count alone and read as a
// reset.
//
// The engine's timing of both phases goes to Timing, each time counter
// with the token counter it pairs with: tokens_predicted_total, and the
// computed prompt tokens (prompt_tokens_total as llama.cpp reports it).
func llamacppPrompt(m *snapshot.Model, aux func(string) (float64, bool)) {
	usable := func(v float64, ok bool) snapshot.Value {
		return snapshot.Value{V: v, OK: ok && v >= 0 && !math.IsNaN(v) && !math.IsInf(v, 0)}
	}
	if gen := m.Counters[snapshot.GenerationTokens]; gen.OK {
		if s := usable(aux("llamacpp:tokens_predicted_seconds_total")); s.OK {
			m.Timing.GenerationSeconds, m.Timing.GenerationTokens = s, gen
		}
	}
	if p := m.Counters[snapshot.PromptTokens]; p.OK {
		if s := usable(aux("llamacpp:prompt_seconds_total")); s.OK {
			m.Timing.PromptSeconds, m.Timing.PromptTokens = s, p
		}
	}
	if m.CounterFailed[snapshot.PrefixCacheHits] {
		m.Counters[snapshot.PromptTokens] = snapshot.Value{}
		m.CounterFailed[snapshot.PromptTokens] = true
		return
	}
	hits, prompt := m.Counters[snapshot.PrefixCacheHits], m.Counters[snapshot.PromptTokens]
	if !hits.OK || !prompt.OK {
		return
	}
	all := snapshot.Value{V: prompt.V + hits.V, OK: true}
	m.Counters[snapshot.PromptTokens] = all
	m.Counters[snapshot.PrefixCacheQueries] = all
}
