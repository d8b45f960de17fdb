package sim

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// vLLM's per-request span: its name and attribute names (vllm/tracing.py
// SpanAttributes, set in vllm/v1/engine/output_processor.py do_tracing).
const (
	spanName             = "llm_request"
	attrModel            = "gen_ai.response.model"
	attrRequestID        = "gen_ai.request.id"
	attrMaxTokens        = "gen_ai.request.max_tokens"
	attrPromptTokens     = "gen_ai.usage.prompt_tokens"
	attrCompletionTokens = "gen_ai.usage.completion_tokens"
	attrTTFT             = "gen_ai.latency.time_to_first_token"
	attrE2E              = "gen_ai.latency.e2e"
	attrQueue            = "gen_ai.latency.time_in_queue"
	attrPrefill          = "gen_ai.latency.time_in_model_prefill"
	attrDecode           = "gen_ai.latency.time_in_model_decode"
	attrInference        = "gen_ai.latency.time_in_model_inference"
	attrFinishReasons    = "gen_ai.response.finish_reasons"
)

// SpanOptions describe the trace spans the simulated engine emits.
type SpanOptions struct {
	// Service is the resource's service.name (vLLM: OTEL_SERVICE_NAME).
	Service string
	// Model is put in gen_ai.response.model, as vLLM V0 does; empty leaves
	// it out, as vLLM V1 does.
	Model string
	// Epoch is the wall time of virtual time 0.
	Epoch time.Time
}

// Spans returns one export holding an llm_request span for each record,
// with vLLM's attribute names and the record's true values: a request
// that produced no token has no time to first token, prefill or decode
// time, and one that was never scheduled waited its whole life in the
// queue (as Record.Queue says).
func Spans(recs []Record, o SpanOptions) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", o.Service)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("vllm.v1.engine.output_processor")
	spans := ss.Spans()
	spans.EnsureCapacity(len(recs))
	ts := func(d time.Duration) pcommon.Timestamp { return pcommon.NewTimestampFromTime(o.Epoch.Add(d)) }
	// Record ids restart at every engine: the service's hash in the trace
	// id keeps the spans of two engines apart, as random ids would (the
	// daemon counts a span whose ids it has seen as a copy).
	h := fnv.New64a()
	h.Write([]byte(o.Service))
	var svc [8]byte
	binary.BigEndian.PutUint64(svc[:], h.Sum64())
	for i := range recs {
		r := &recs[i]
		sp := spans.AppendEmpty()
		sp.SetName(spanName)
		sp.SetKind(ptrace.SpanKindServer)
		var tid pcommon.TraceID
		var sid pcommon.SpanID
		for k := range 8 {
			tid[8+k] = byte(r.ID >> (8 * (7 - k)))
			sid[k] = byte(r.ID >> (8 * (7 - k)))
		}
		tid[0] = 1
		copy(tid[1:8], svc[:7])
		sp.SetTraceID(tid)
		sp.SetSpanID(sid)
		sp.SetStartTimestamp(ts(r.Arrival))
		sp.SetEndTimestamp(ts(r.Finish))
		a := sp.Attributes()
		if o.Model != "" {
			a.PutStr(attrModel, o.Model)
		}
		a.PutStr(attrRequestID, "sim-"+strconv.FormatUint(r.ID, 10))
		a.PutInt(attrMaxTokens, int64(r.MaxTokens))
		a.PutInt(attrPromptTokens, int64(r.PromptTokens))
		a.PutInt(attrCompletionTokens, int64(r.OutputTokens))
		a.PutDouble(attrE2E, r.E2E().Seconds())
		a.PutDouble(attrQueue, r.Queue().Seconds())
		if ttft, ok := r.TTFT(); ok {
			a.PutDouble(attrTTFT, ttft.Seconds())
			a.PutDouble(attrPrefill, (r.FirstToken - r.FirstScheduled).Seconds())
			a.PutDouble(attrDecode, (r.LastToken - r.FirstToken).Seconds())
			a.PutDouble(attrInference, (r.LastToken - r.FirstScheduled).Seconds())
		}
		reasons, _ := json.Marshal([]string{string(r.Reason)})
		a.PutStr(attrFinishReasons, string(reasons))
		if r.Reason == FinishError {
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
	}
	return td
}
