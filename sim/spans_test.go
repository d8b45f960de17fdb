package sim

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// A record becomes a span with vLLM's names and the record's own values.
func TestSpans(t *testing.T) {
	ms := time.Millisecond
	recs := []Record{
		// arrived at 1 s, scheduled 50 ms later, first token at 1.2 s,
		// last at 2.2 s, finished at 2.2 s, 21 tokens.
		{ID: 7, Arrival: time.Second, Scheduled: true, FirstScheduled: 1050 * ms, HasFirstToken: true, FirstToken: 1200 * ms,
			LastToken: 2200 * ms, Finish: 2200 * ms, PromptTokens: 90, OutputTokens: 21, MaxTokens: 256, Reason: FinishStop},
		// aborted in the queue after 3 s: no token, queued its whole life.
		{ID: 8, Arrival: time.Second, Finish: 4 * time.Second, PromptTokens: 90, Reason: FinishAbort},
		{ID: 9, Arrival: 0, Scheduled: true, HasFirstToken: true, FirstToken: 100 * ms, LastToken: 100 * ms, Finish: 100 * ms, OutputTokens: 1, Reason: FinishError},
	}
	td := Spans(recs, SpanOptions{Service: "engine-0", Model: "llama", Epoch: time.Unix(1000, 0)})
	rs := td.ResourceSpans().At(0)
	if v, _ := rs.Resource().Attributes().Get("service.name"); v.Str() != "engine-0" {
		t.Errorf("service.name %q", v.Str())
	}
	spans := rs.ScopeSpans().At(0).Spans()
	if spans.Len() != 3 {
		t.Fatalf("%d spans", spans.Len())
	}
	s := spans.At(0)
	if s.Name() != "llm_request" || s.Kind() != ptrace.SpanKindServer || !s.StartTimestamp().AsTime().Equal(time.Unix(1001, 0)) {
		t.Errorf("span %s %v %v", s.Name(), s.Kind(), s.StartTimestamp().AsTime())
	}
	want := map[string]any{
		"gen_ai.response.model": "llama", "gen_ai.usage.completion_tokens": int64(21), "gen_ai.usage.prompt_tokens": int64(90),
		"gen_ai.latency.e2e": 1.2, "gen_ai.latency.time_to_first_token": 0.2, "gen_ai.latency.time_in_queue": 0.05,
		"gen_ai.latency.time_in_model_decode": 1.0, "gen_ai.latency.time_in_model_prefill": 0.15,
		"gen_ai.response.finish_reasons": `["stop"]`,
	}
	got := s.Attributes().AsRaw()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	a := spans.At(1).Attributes().AsRaw()
	if _, has := a["gen_ai.latency.time_to_first_token"]; has || a["gen_ai.latency.time_in_queue"] != 3.0 || a["gen_ai.response.finish_reasons"] != `["abort"]` {
		t.Errorf("queued abort: %v", a)
	}
	if spans.At(2).Status().Code() != ptrace.StatusCodeError {
		t.Errorf("an error finish must set the error status")
	}
}
