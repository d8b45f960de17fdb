package collector

import (
	"slices"
	"strings"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// vLLM's per-request output length: two data-parallel engines of
// v1-latest-from-source.prom add up. By hand from the fixture's lines:
// count 1200 + 1100, sum 343899 + 310221, le="50" 216 + 225.
func TestVLLMOutputTokensHistogram(t *testing.T) {
	s := mustParse(t, snapshot.VLLM, string(readFixture(t, snapshot.VLLM, "v1-latest-from-source.prom")), "")
	h := s.Model("meta-llama/Llama-3.1-8B-Instruct").Hists[snapshot.OutputTokens]
	if h == nil {
		t.Fatal("vllm:request_generation_tokens not read")
	}
	if h.Count != 2300 || h.Sum != 654120 {
		t.Errorf("count %v sum %v, want 2300 and 654120", h.Count, h.Sum)
	}
	i := slices.Index(h.Bounds, 50)
	if i < 0 || h.Cumulative[i] != 441 {
		t.Errorf("le=50: bounds %v cumulative %v, want 441", h.Bounds, h.Cumulative)
	}
	if !Support(snapshot.VLLM)["llm_request_generation_tokens"] || Support(snapshot.LlamaCPP)["llm_request_generation_tokens"] {
		t.Error("support: vLLM has the output-length histogram, llama.cpp has none")
	}
}

// SGLang exposes it as generation_tokens_histogram when started with
// --collect-tokens-histogram (TokenizerMetricsCollector, default buckets
// 100, 300, 500, …); the smg sidecar re-exports it as sglang_*.
func TestSGLangOutputTokensHistogram(t *testing.T) {
	const body = `# TYPE sglang:generation_tokens_histogram histogram
sglang:generation_tokens_histogram_bucket{le="100.0",model_name="m"} 3.0
sglang:generation_tokens_histogram_bucket{le="300.0",model_name="m"} 7.0
sglang:generation_tokens_histogram_bucket{le="+Inf",model_name="m"} 8.0
sglang:generation_tokens_histogram_sum{model_name="m"} 2100.0
sglang:generation_tokens_histogram_count{model_name="m"} 8.0
`
	for _, b := range []string{body, strings.ReplaceAll(body, "sglang:", "sglang_")} {
		s := mustParse(t, snapshot.SGLang, b, "")
		m := s.Model("m")
		if m == nil || m.Hists[snapshot.OutputTokens] == nil {
			t.Fatalf("generation_tokens_histogram not read from\n%s", b)
		}
		h := m.Hists[snapshot.OutputTokens]
		if !slices.Equal(h.Bounds, []float64{100, 300}) || !slices.Equal(h.Cumulative, []float64{3, 7}) || h.Count != 8 || h.Sum != 2100 {
			t.Errorf("got %+v", h)
		}
	}
	if !Support(snapshot.SGLang)["llm_request_generation_tokens"] {
		t.Error("support: SGLang can expose the output-length histogram")
	}
}
