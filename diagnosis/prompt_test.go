package diagnosis

import (
	"math"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Prompt tokens per request divides by the requests the prompt tokens
// were counted for: those that got their first token on an engine that
// counts prompts then (vLLM), those that finished on one that counts them
// when a request finishes (trtllm-serve). Each 5 s cycle here 10 requests
// get their first token while 8 finish, and the 8 add 8 × 1,000 prompt
// tokens: 1,000 per request by the finished count, 800 by the first
// tokens, which for an engine counting at finish mixes two sets of
// requests (and moved with bursts and long generations, raising
// prefill_interference on healthy traffic).
func TestPromptTokensPerRequestAtFinish(t *testing.T) {
	for _, c := range []struct {
		kind snapshot.Engine
		want float64
	}{{snapshot.TRTLLM, 1000}, {snapshot.VLLM, 800}} {
		d, e := New(settings()), newEngine()
		e.kind = c.kind
		vs := run(d, e, 0, 40, func(int) {
			e.running, e.waiting, e.kv = 40, 0, 0.1
			e.ctr[snapshot.PromptTokens] += 8000
			e.ctr[snapshot.GenerationTokens] += 2500
			e.fin["stop"] += 8
			observe(e.ttft, 0.05, 10)
			observe(e.itl, 0.02, 2500)
		})
		w := vs[len(vs)-1].Window
		if got := w.PromptTokensPerRequest; !got.OK || math.Abs(got.V-c.want) > 1e-9 {
			t.Errorf("%s: prompt tokens per request %+v, want %g", c.kind, got, c.want)
		}
	}
}
