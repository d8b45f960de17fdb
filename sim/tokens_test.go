package sim

import (
	"slices"
	"testing"
)

// The per-request output-length histograms hold one observation per
// finished request, whatever its reason, with its generated tokens: their
// count and sum are those of the ground-truth records, counted
// independently. SGLang's exists only with --collect-tokens-histogram.
func TestOutputTokenHistograms(t *testing.T) {
	if _, ok := parseText(t, text(t, busyEngine(t, nil), FormatSGLang))["sglang:generation_tokens_histogram"]; ok {
		t.Error("SGLang exposes its token histograms only when asked to")
	}
	e := busyEngine(t, func(c *Config) { c.Engine.TokenHistograms = true })
	recs := e.Truth().Records(0, e.Now()+1)
	var tokens float64
	for _, r := range recs {
		tokens += float64(r.OutputTokens)
	}
	if len(recs) == 0 || tokens == 0 {
		t.Fatal("no finished requests")
	}
	for _, c := range []struct {
		format Format
		family string
		bounds []float64
	}{
		// 1-2-5 up to max_model_len 131072 (buckets.py).
		{FormatVLLM, "vllm:request_generation_tokens", []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000}},
		// The default prompt-token list, which collector.py reuses for
		// generation tokens.
		{FormatSGLang, "sglang:generation_tokens_histogram", []float64{100, 300, 500, 700, 1000, 1500, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000,
			12000, 15000, 20000, 22000, 25000, 30000, 35000, 40000, 66000, 99000, 132000, 300000, 600000, 900000, 1100000}},
	} {
		mf, ok := parseText(t, text(t, e, c.format))[c.family]
		if !ok {
			t.Errorf("%s missing", c.family)
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		if float64(h.GetSampleCount()) != float64(len(recs)) || h.GetSampleSum() != tokens {
			t.Errorf("%s: count %d sum %v, truth %d requests and %v tokens", c.family, h.GetSampleCount(), h.GetSampleSum(), len(recs), tokens)
		}
		if got := bounds(mf); !slices.Equal(got, c.bounds) {
			t.Errorf("%s: buckets %v, want %v", c.family, got, c.bounds)
		}
	}
}
