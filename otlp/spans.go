package otlp

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// The attribute names vLLM puts on its per-request span. They have not
// changed since the span was introduced; what changed is which of them
// each engine generation sets.
//
//   - vLLM V0 (vllm/engine/llm_engine.py, create_trace_span; names in
//     vllm/tracing.py, class SpanAttributes, vllm-project/vllm): span
//     "llm_request", kind SERVER, with gen_ai.response.model,
//     gen_ai.request.id/temperature/top_p/max_tokens/n,
//     gen_ai.usage.num_sequences, gen_ai.usage.prompt_tokens,
//     gen_ai.usage.completion_tokens, gen_ai.latency.time_in_queue,
//     gen_ai.latency.time_to_first_token, gen_ai.latency.e2e and, when
//     collected, gen_ai.latency.time_in_scheduler/_model_forward/_model_execute.
//   - vLLM V1 (vllm/v1/engine/output_processor.py, OutputProcessor.do_tracing):
//     the same span name and kind, started at the request's arrival, with
//     time_to_first_token, e2e, time_in_queue, prompt_tokens,
//     completion_tokens, gen_ai.latency.time_in_model_prefill/_decode/_inference,
//     and no gen_ai.response.model: the model comes from the target then.
//   - Later V1 (names moved to vllm/tracing/utils.py, SpanAttributes) adds
//     gen_ai.request.id and gen_ai.response.finish_reasons, a JSON-encoded
//     list of the finish reasons ("stop", "length", "abort", "error"), and
//     sets an error status on the span when the request failed.
//
// SGLang's tracing (python/sglang/srt/tracing/trace.py, sgl-project/sglang)
// emits per-stage spans of its own without these per-request latency
// attributes; its spans are counted as not_request and judged nowhere.
const (
	SpanName             = "llm_request"
	AttrModel            = "gen_ai.response.model"
	AttrPromptTokens     = "gen_ai.usage.prompt_tokens"
	AttrCompletionTokens = "gen_ai.usage.completion_tokens"
	AttrTTFT             = "gen_ai.latency.time_to_first_token"
	AttrE2E              = "gen_ai.latency.e2e"
	AttrQueue            = "gen_ai.latency.time_in_queue"
	AttrPrefill          = "gen_ai.latency.time_in_model_prefill"
	AttrDecode           = "gen_ai.latency.time_in_model_decode"
	AttrFinishReasons    = "gen_ai.response.finish_reasons"
	AttrMaxTokens        = "gen_ai.request.max_tokens"
	AttrN                = "gen_ai.request.n"
	AttrNumSequences     = "gen_ai.usage.num_sequences"

	// AttrUsageEstimated, set true by the measuring proxy (package proxy),
	// says gen_ai.usage.completion_tokens is an estimate: no usage came
	// with the response. Such a request is not judged against tpot.
	AttrUsageEstimated = "goodput_exporter.usage.estimated"

	// Resource attributes a target can be matched by.
	ResService   = "service.name"
	ResPod       = "k8s.pod.name"
	ResNamespace = "k8s.namespace.name"
	ResHost      = "host.name"
)

// Span outcomes, the values of the result label of
// goodput_exporter_otlp_spans_total.
const (
	ResultFolded      = "folded"      // judged against the target's SLOs
	ResultNotRequest  = "not_request" // no gen_ai.latency.e2e: another span of the trace
	ResultMalformed   = "malformed"   // a request span with a missing or impossible value
	ResultUnmatched   = "unmatched"   // no target matches its resource or sender
	ResultAmbiguous   = "ambiguous"   // more than one target matches
	ResultNoModel     = "no_model"    // no model on the span and none the target can name
	ResultModelLimit  = "model_limit" // a new model past the target's model_limit
	ResultDuplicate   = "duplicate"   // a copy of a span read before (at-least-once delivery)
	ResultImplausible = "implausible" // a value no engine can produce; the reason in goodput_exporter_otlp_implausible_spans_total
)

// Results lists every span outcome, for initialising counters.
var Results = []string{ResultFolded, ResultNotRequest, ResultMalformed, ResultUnmatched, ResultAmbiguous, ResultNoModel, ResultModelLimit, ResultDuplicate, ResultImplausible}

// Request decodes one span into a traced request. ok is false with the
// outcome (not_request or malformed) when it is not a usable request span.
// A latency or count that is negative, not finite, or of the wrong type
// makes the span malformed, and so does a request span without the trace
// and span ids OTLP requires (they are what a copy is recognised by): it is
// never folded with a made-up value.
func Request(span ptrace.Span) (r goodput.TracedRequest, result string) {
	attrs := span.Attributes()
	e2e, has, ok := seconds(attrs, AttrE2E)
	if !has {
		return r, ResultNotRequest
	}
	if !ok || !validIDs(span.TraceID(), span.SpanID()) {
		return r, ResultMalformed
	}
	r.E2E = e2e
	n, has, ok := count(attrs, AttrCompletionTokens)
	if !has || !ok {
		return r, ResultMalformed
	}
	r.CompletionTokens = n
	if r.TTFT, r.HasTTFT, ok = seconds(attrs, AttrTTFT); !ok {
		return r, ResultMalformed
	}
	if r.Queue, r.HasQueue, ok = seconds(attrs, AttrQueue); !ok {
		return r, ResultMalformed
	}
	if r.Decode, r.HasDecode, ok = seconds(attrs, AttrDecode); !ok {
		return r, ResultMalformed
	}
	if v, has := attrs.Get(AttrModel); has {
		if v.Type() != pcommon.ValueTypeStr {
			return r, ResultMalformed
		}
		r.Model = v.Str()
	}
	if v, has := attrs.Get(AttrUsageEstimated); has {
		if v.Type() != pcommon.ValueTypeBool {
			return r, ResultMalformed
		}
		r.TokensEstimated = v.Bool()
	}
	if v, has := attrs.Get(AttrFinishReasons); has {
		reasons, ok := finishReasons(v)
		if !ok {
			return r, ResultMalformed
		}
		for _, x := range reasons {
			switch x {
			case goodput.ReasonError:
				r.Failed = true
			case goodput.ReasonAbort:
				r.Aborted = true
			}
		}
	}
	if span.Status().Code() == ptrace.StatusCodeError {
		r.Failed = true
	}
	r.Sampled = Sampled(span.TraceState().AsRaw())
	return r, ResultFolded
}

// seconds reads a latency attribute: a finite, non-negative number (vLLM
// sets floats; an integer is taken too). has is false when absent, ok false
// when present but unusable.
func seconds(attrs pcommon.Map, key string) (v float64, has, ok bool) {
	a, has := attrs.Get(key)
	if !has {
		return 0, false, true
	}
	switch a.Type() {
	case pcommon.ValueTypeDouble:
		v = a.Double()
	case pcommon.ValueTypeInt:
		v = float64(a.Int())
	default:
		return 0, true, false
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, true, false
	}
	return v, true, true
}

// count reads a token count: a non-negative integer, as an int or as a
// double without a fraction.
func count(attrs pcommon.Map, key string) (v float64, has, ok bool) {
	v, has, ok = seconds(attrs, key)
	if !has || !ok {
		return v, has, ok
	}
	if v != math.Trunc(v) || v > 1<<53 {
		return 0, true, false
	}
	return v, true, true
}

// finishReasons reads gen_ai.response.finish_reasons: vLLM sets a string
// holding a JSON list; the semantic conventions a string array. A plain
// string is one reason.
func finishReasons(v pcommon.Value) ([]string, bool) {
	switch v.Type() {
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		out := make([]string, 0, s.Len())
		for i := 0; i < s.Len(); i++ {
			if s.At(i).Type() != pcommon.ValueTypeStr {
				return nil, false
			}
			out = append(out, s.At(i).Str())
		}
		return out, true
	case pcommon.ValueTypeStr:
		raw := strings.TrimSpace(v.Str())
		if !strings.HasPrefix(raw, "[") {
			return []string{raw}, true
		}
		var out []string
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			return nil, false
		}
		return out, true
	}
	return nil, false
}

// Sampled reports whether a W3C trace state says the span was sampled with
// a probability under one, in either of OpenTelemetry's encodings in the
// "ot" member: the threshold th:HEX (probability 1 − th/2^56, th:0 keeps
// everything) or the older p:N (probability 2^−N). A trace state without
// them says nothing, and the span counts as traced in full.
func Sampled(traceState string) bool {
	for _, member := range strings.Split(traceState, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(member), "=")
		if !ok || key != "ot" {
			continue
		}
		for _, kv := range strings.Split(val, ";") {
			k, v, ok := strings.Cut(kv, ":")
			if !ok {
				continue
			}
			switch k {
			case "th":
				if len(v) == 0 || len(v) > 14 {
					continue
				}
				th, err := strconv.ParseUint(v+strings.Repeat("0", 14-len(v)), 16, 64)
				if err == nil && th > 0 {
					return true
				}
			case "p":
				p, err := strconv.ParseUint(v, 10, 8)
				if err == nil && p > 0 {
					return true
				}
			}
		}
	}
	return false
}
