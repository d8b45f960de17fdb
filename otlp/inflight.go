package otlp

import (
	"sync"
	"time"
)

// Defaults of the in-flight caps. An export request's body, its decoded
// spans and the buffers in between are held until it is answered; the
// caps bound how many and how many bytes are held at once, as the
// OpenTelemetry Collector's memory limiter and the admission limits of its
// OTel-Arrow receiver (request_limit_mib) do for its receivers: past them
// a sender is told to retry later (HTTP 429 with Retry-After, gRPC
// RESOURCE_EXHAUSTED with RetryInfo, both retryable in the OTLP
// specification) rather than the daemon holding it.
const (
	DefaultMaxInflightRequests = 16
	DefaultMaxInflightBytes    = 16 << 20
	retryAfter                 = time.Second
)

// RejectInflight is the reason of a request refused at the in-flight caps.
const RejectInflight = "over_inflight_limit"

// inflight counts the requests being served and the bytes they hold.
type inflight struct {
	maxReqs  int
	maxBytes int64
	mu       sync.Mutex
	reqs     int
	bytes    int64
}

// acquire admits one request holding n bytes, or says no.
func (l *inflight) acquire(n int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reqs >= l.maxReqs || l.bytes+n > l.maxBytes {
		return false
	}
	l.reqs++
	l.bytes += n
	return true
}

// grow adds n bytes to an admitted request, or says no.
func (l *inflight) grow(n int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bytes+n > l.maxBytes {
		return false
	}
	l.bytes += n
	return true
}

// release ends an admitted request that held n bytes.
func (l *inflight) release(n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs--
	l.bytes -= n
}

func (l *inflight) now() (int, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reqs, l.bytes
}

// exportMethod is the one gRPC method the receiver serves.
const exportMethod = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

const overloaded = "too many OTLP exports in flight (--otlp.max-inflight-requests, --otlp.max-inflight-bytes); retry later"
