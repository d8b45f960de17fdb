package otlp

import (
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// Bounds on what one request span may say. A span past one is refused as
// implausible, with the reason, and counted nowhere else: one span must
// not be able to add more than one request could.
const (
	// DefaultMaxCompletionTokens is the default ceiling on the tokens one
	// request generated (--otlp.max-completion-tokens): ten times a 1M
	// context, for requests with several sequences.
	DefaultMaxCompletionTokens = 10_000_000
	// MaxLatency caps every latency of a span: no request an SLO judges
	// runs for a day.
	MaxLatency = 86400.0
	// MaxModelNameBytes caps the model a span names, the value of the
	// model label of every series it creates. Hugging Face repository ids
	// are at most 96 + 1 + 96 bytes; a served model name that is a path
	// still fits.
	MaxModelNameBytes = 256
	// MaxClockAhead is how far in the future of the daemon's clock a
	// span may end: a sender's clock a few hours off, or in another time
	// zone read as UTC, still passes; year 2200 does not.
	MaxClockAhead = 24 * time.Hour
)

// minSpanTime is the earliest time a request span may start: an unset
// timestamp (0, 1970) or a clock that never synchronised is not a request
// that ran.
var minSpanTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Reasons a span is implausible, the reason label of
// goodput_exporter_otlp_implausible_spans_total.
const (
	ReasonOverMaxTokens  = "completion_tokens_over_max_tokens" // more tokens than the request's max_tokens × sequences
	ReasonOverCeiling    = "completion_tokens_over_ceiling"    // more than --otlp.max-completion-tokens
	ReasonLatency        = "latency_over_a_day"                // a latency attribute over 86,400 s
	ReasonModelTooLong   = "model_name_too_long"               // a model name over 256 bytes
	ReasonTimeBefore     = "time_before_2000"                  // a start time before 2000 (0 when unset)
	ReasonTimeAhead      = "time_over_a_day_ahead"             // an end more than a day after the daemon's clock
	ReasonEndBeforeStart = "end_before_start"                  // an end time before the start time
)

// Reasons lists every implausibility reason, for initialising counters.
var Reasons = []string{ReasonOverMaxTokens, ReasonOverCeiling, ReasonLatency, ReasonModelTooLong, ReasonTimeBefore, ReasonTimeAhead, ReasonEndBeforeStart}

// implausible returns why a decoded request span cannot be true, or "".
// max_tokens bounds each sequence of a request: vLLM V0 sums the tokens of
// all of them (gen_ai.request.n, or gen_ai.usage.num_sequences for beam
// search) into completion_tokens. now is the daemon's clock, that a span
// may not end more than MaxClockAhead after.
func implausible(span ptrace.Span, r *goodput.TracedRequest, ceiling float64, now time.Time) string {
	if len(r.Model) > MaxModelNameBytes {
		return ReasonModelTooLong
	}
	start, end := span.StartTimestamp().AsTime(), span.EndTimestamp().AsTime()
	switch {
	case start.Before(minSpanTime):
		return ReasonTimeBefore
	case end.Before(start):
		return ReasonEndBeforeStart
	case end.After(now.Add(MaxClockAhead)):
		return ReasonTimeAhead
	}
	if r.E2E > MaxLatency || r.TTFT > MaxLatency || r.Queue > MaxLatency || r.Decode > MaxLatency {
		return ReasonLatency
	}
	if r.CompletionTokens > ceiling {
		return ReasonOverCeiling
	}
	attrs := span.Attributes()
	if limit, has, ok := count(attrs, AttrMaxTokens); has && ok && limit > 0 {
		seqs := 1.0
		for _, k := range []string{AttrN, AttrNumSequences} {
			if n, has, ok := count(attrs, k); has && ok {
				seqs = max(seqs, n)
			}
		}
		if r.CompletionTokens > limit*seqs {
			return ReasonOverMaxTokens
		}
	}
	return ""
}
