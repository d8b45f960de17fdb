package collector

import (
	"os"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// llama.cpp b11669's timing of its phases, read from the real captures
// as printed: each time counter with the token counter it pairs with
// (the prompt tokens it computed, 13,779, not llm_prompt_tokens_total's
// computed plus cached). Engines that do not time their phases have no
// Timing; a time counter that is unusable leaves its pair out.
func TestLlamaCPPTimingByHand(t *testing.T) {
	for _, c := range []struct {
		file                            string
		genS, genTok, promptS, promptTk float64
	}{
		{"llamacpp-b11669-0.7.0-debian-light-load.prom", 86.4955, 14208, 16.7748, 13779},
		{"llamacpp-b11669-0.7.0-debian-overload.prom", 427.229, 47552, 57.3891, 46180},
		{"llamacpp-b11669-0.7.0-debian-counter-over-1e6.prom", 0.000678, 678, 158.12, 1244920},
	} {
		m := mustParse(t, snapshot.LlamaCPP, string(readFixture(t, snapshot.LlamaCPP, c.file)), "").Model("m0")
		tm := m.Timing
		checkValues(t, []want{
			{c.file + " generation seconds", tm.GenerationSeconds, c.genS},
			{c.file + " generation tokens", tm.GenerationTokens, c.genTok},
			{c.file + " prompt seconds", tm.PromptSeconds, c.promptS},
			{c.file + " prompt tokens computed", tm.PromptTokens, c.promptTk},
		})
	}
	for _, e := range []snapshot.Engine{snapshot.VLLM, snapshot.SGLang, snapshot.TGI} {
		for _, f := range fixtures(t)[e] {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			s := mustParse(t, e, string(b), "")
			for _, m := range s.Models {
				if m.Timing != (snapshot.Timing{}) {
					t.Errorf("%s %s: timing %+v from an engine that has none", e, f, m.Timing)
				}
			}
		}
	}
	// The repeated 1,721-token prompt: 1 computed in the timed seconds,
	// 1,720 from the cache in none.
	m := mustParse(t, snapshot.LlamaCPP, "llamacpp:prompt_tokens_total 1\nllamacpp:prompt_tokens_cached_total 1720\nllamacpp:prompt_seconds_total 0.002\n", "").Model("m0")
	checkValues(t, []want{{"prompt tokens timed", m.Timing.PromptTokens, 1}, {"all prompt tokens", m.Counters[snapshot.PromptTokens], 1721}})
	s := mustParse(t, snapshot.LlamaCPP, "llamacpp:tokens_predicted_total 10\nllamacpp:tokens_predicted_seconds_total NaN\n"+
		"llamacpp:prompt_tokens_total 5\nllamacpp:prompt_seconds_total -1\n", "")
	if tm := s.Model("m0").Timing; tm != (snapshot.Timing{}) {
		t.Errorf("unusable time counters: %+v, want no timing", tm)
	}
}
