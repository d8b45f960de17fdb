package proxy

import "time"

// Outcomes of a measured request, the outcome label of
// goodput_exporter_proxy_requests_total and the value of the span's
// goodput_exporter.proxy.outcome attribute.
const (
	OutcomeOK            = "ok"             // the response ended normally
	OutcomeUpstreamError = "upstream_error" // an error status, refused or reset, a malformed stream or an error event
	OutcomeTimeout       = "timeout"        // past --upstream.timeout or --upstream.header-timeout
	OutcomeClientAbort   = "client_abort"   // the client hung up first; the upstream request was cancelled
	OutcomeRejected      = "rejected"       // a 4xx other than 408 and 429, or a body over the limit: no span
)

// Outcomes lists every outcome, for initialising counters.
var Outcomes = []string{OutcomeOK, OutcomeUpstreamError, OutcomeTimeout, OutcomeClientAbort, OutcomeRejected}

// Reasons an upstream failed, the reason label of
// goodput_exporter_proxy_upstream_errors_total.
const (
	ReasonStatus      = "status"           // an HTTP 5xx, 408 or 429
	ReasonRefused     = "refused"          // connection refused
	ReasonReset       = "reset"            // connection reset or closed, before or during the response
	ReasonMalformed   = "malformed_stream" // a data line that is not JSON, or an event over --max-event-size
	ReasonErrorEvent  = "error_event"      // an error object or an "error" event in the stream
	maxFinishReasons  = 4
	maxResponseModels = 256
)

// UpstreamReasons lists every upstream error reason.
var UpstreamReasons = []string{ReasonStatus, ReasonRefused, ReasonReset, ReasonMalformed, ReasonErrorEvent}

// Record is one measured request, as the client saw it.
type Record struct {
	// Arrival is when the proxy received the request; End when its last
	// byte was read from the upstream (or it failed).
	Arrival, End time.Time
	// TTFT is arrival to the first content-bearing chunk (for a response
	// that is not a stream, its body's first byte), when HasTTFT.
	TTFT    time.Duration
	HasTTFT bool
	// Tokens are the completion tokens: the response's usage, unless
	// Estimated (no usage came: the content-bearing choices the stream
	// delivered, one token each; for a non-streamed answer without usage,
	// one per choice with content, a lower bound).
	Tokens       int64
	Estimated    bool
	PromptTokens int64 // -1 when unknown
	// Model is the request's model, else the response's.
	Model string
	// Outcome and, for upstream errors, Reason; Status is the HTTP status
	// the upstream answered (0 when it did not).
	Outcome, Reason string
	Status          int
	// FinishReasons are the choices' finish reasons, at most 4 distinct.
	FinishReasons []string
	// Stream is the request's stream flag; N and MaxTokens its n and
	// max_tokens (0 when not set).
	Stream       bool
	N, MaxTokens int64
	// TraceID and ParentSpanID come from the client's traceparent (zero
	// when it sent none).
	TraceID      [16]byte
	ParentSpanID [8]byte
}

// E2E is arrival to the last byte.
func (r *Record) E2E() time.Duration { return r.End.Sub(r.Arrival) }
