package proxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/goodput-exporter/goodput-exporter/otlp"
)

// Attributes the proxy adds to vLLM's (documented in docs/otlp.md).
const (
	AttrOutcome         = "goodput_exporter.proxy.outcome"      // one of the Outcomes
	AttrErrorReason     = "goodput_exporter.proxy.error_reason" // one of the UpstreamReasons
	AttrUsageEstimated  = otlp.AttrUsageEstimated
	AttrHTTPStatus      = "http.response.status_code"
	AttrStream          = "goodput_exporter.proxy.stream"
	ScopeName           = "github.com/goodput-exporter/goodput-exporter/proxy"
	DefaultQueueSize    = 4096
	DefaultBatchSize    = 512
	DefaultBatchTimeout = time.Second
	// DefaultExportTimeout caps one export request to the daemon.
	DefaultExportTimeout = 5 * time.Second
)

// Resource names the engine behind the proxy, as the daemon matches
// spans to its targets (docs/otlp.md).
type Resource struct {
	ServiceName, Pod, Namespace, Host string
}

// ExporterOptions configure an Exporter.
type ExporterOptions struct {
	// Endpoint is the daemon's OTLP/HTTP traces URL, e.g.
	// http://127.0.0.1:4318/v1/traces.
	Endpoint string
	Resource Resource
	// QueueSize, BatchSize, BatchTimeout and Timeout: 0 means the defaults.
	QueueSize, BatchSize  int
	BatchTimeout, Timeout time.Duration
	Client                *http.Client
	Logger                *slog.Logger
}

// Exporter sends measured requests to the daemon as spans, in batches,
// from a bounded queue: Enqueue never blocks, and a record that does not
// fit is dropped and counted.
type Exporter struct {
	o     ExporterOptions
	m     *Metrics
	queue chan Record
	done  chan struct{}
}

// NewExporter returns an exporter counting into m; Run sends.
func NewExporter(o ExporterOptions, m *Metrics) *Exporter {
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.BatchTimeout <= 0 {
		o.BatchTimeout = DefaultBatchTimeout
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultExportTimeout
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Exporter{o: o, m: m, queue: make(chan Record, o.QueueSize), done: make(chan struct{})}
	m.queueLen = func() int { return len(e.queue) }
	return e
}

// Enqueue queues a record for export, or drops it when the queue is full.
// The record is copied: the caller may reuse it.
func (e *Exporter) Enqueue(r *Record) {
	select {
	case e.queue <- *r:
	default:
		e.m.spansDropped.WithLabelValues(DropQueueFull).Inc()
	}
}

// Run sends batches until ctx is done, then sends what is queued (within
// one export timeout) and returns. An export under way when ctx ends is
// not cancelled but finishes within its own timeout: its spans are off
// the queue, and the daemon may already hold them.
func (e *Exporter) Run(ctx context.Context) {
	defer close(e.done)
	running := context.WithoutCancel(ctx)
	batch := make([]Record, 0, e.o.BatchSize)
	tick := time.NewTicker(e.o.BatchTimeout)
	defer tick.Stop()
	flush := func(ctx context.Context) {
		if len(batch) > 0 {
			e.send(ctx, batch)
			clear(batch)
			batch = batch[:0]
		}
	}
	for {
		select {
		case r := <-e.queue:
			batch = append(batch, r)
			if len(batch) == e.o.BatchSize {
				flush(running)
			}
		case <-tick.C:
			flush(running)
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.Background(), e.o.Timeout)
			defer cancel()
			for {
				select {
				case r := <-e.queue:
					batch = append(batch, r)
					if len(batch) == e.o.BatchSize {
						flush(final)
					}
					continue
				default:
				}
				break
			}
			flush(final)
			return
		}
	}
}

// Done is closed when Run has returned.
func (e *Exporter) Done() <-chan struct{} { return e.done }

// send exports one batch; failures drop it, counted.
func (e *Exporter) send(ctx context.Context, recs []Record) {
	body, err := ptraceotlp.NewExportRequestFromTraces(Spans(recs, e.o.Resource)).MarshalProto()
	if err != nil {
		e.m.spansDropped.WithLabelValues(DropExport).Add(float64(len(recs)))
		return
	}
	rejected, err := e.post(ctx, body)
	if err != nil {
		e.o.Logger.Warn("request spans dropped: the daemon's OTLP receiver did not take them", "spans", len(recs), "err", err)
		e.m.spansDropped.WithLabelValues(DropExport).Add(float64(len(recs)))
		return
	}
	rejected = min(max(rejected, 0), int64(len(recs)))
	e.m.spansDropped.WithLabelValues(DropRejected).Add(float64(rejected))
	e.m.spansSent.Add(float64(int64(len(recs)) - rejected))
}

func (e *Exporter) post(ctx context.Context, body []byte) (rejected int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, e.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.o.Endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := e.o.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	er := ptraceotlp.NewExportResponse()
	if er.UnmarshalProto(out) != nil {
		return 0, nil // accepted; the response is not read
	}
	return er.PartialSuccess().RejectedSpans(), nil
}

// Spans builds one export of llm_request spans with vLLM's attribute
// names (and the proxy's own, documented in docs/otlp.md).
func Spans(recs []Record, res Resource) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	ra := rs.Resource().Attributes()
	for k, v := range map[string]string{otlp.ResService: res.ServiceName, otlp.ResPod: res.Pod, otlp.ResNamespace: res.Namespace, otlp.ResHost: res.Host} {
		if v != "" {
			ra.PutStr(k, v)
		}
	}
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(ScopeName)
	spans := ss.Spans()
	spans.EnsureCapacity(len(recs))
	for i := range recs {
		span(spans.AppendEmpty(), &recs[i])
	}
	return td
}

func span(sp ptrace.Span, r *Record) {
	sp.SetName(otlp.SpanName)
	sp.SetKind(ptrace.SpanKindServer)
	tid := r.TraceID
	if tid == ([16]byte{}) {
		binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rand.Uint64())
	} else {
		sp.SetParentSpanID(pcommon.SpanID(r.ParentSpanID))
	}
	var sid [8]byte
	binary.BigEndian.PutUint64(sid[:], rand.Uint64()|1)
	sp.SetTraceID(pcommon.TraceID(tid))
	sp.SetSpanID(pcommon.SpanID(sid))
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(r.Arrival))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(r.End))
	a := sp.Attributes()
	a.PutDouble(otlp.AttrE2E, max(r.E2E().Seconds(), 0))
	if r.HasTTFT {
		a.PutDouble(otlp.AttrTTFT, max(r.TTFT.Seconds(), 0))
	}
	a.PutInt(otlp.AttrCompletionTokens, r.Tokens)
	if r.Estimated {
		a.PutBool(AttrUsageEstimated, true)
	}
	if r.PromptTokens >= 0 {
		a.PutInt(otlp.AttrPromptTokens, r.PromptTokens)
	}
	if r.Model != "" {
		a.PutStr(otlp.AttrModel, r.Model)
	}
	if r.MaxTokens > 0 {
		a.PutInt(otlp.AttrMaxTokens, r.MaxTokens)
	}
	if r.N > 0 {
		a.PutInt(otlp.AttrN, r.N)
	}
	a.PutStr(AttrOutcome, r.Outcome)
	a.PutBool(AttrStream, r.Stream)
	if r.Reason != "" {
		a.PutStr(AttrErrorReason, r.Reason)
	}
	if r.Status != 0 {
		a.PutInt(AttrHTTPStatus, int64(r.Status))
	}
	reasons := r.FinishReasons
	switch r.Outcome {
	case OutcomeUpstreamError, OutcomeTimeout:
		reasons = []string{"error"}
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage(r.Outcome + " " + r.Reason)
	case OutcomeClientAbort:
		reasons = []string{"abort"}
	}
	if len(reasons) > 0 {
		b, _ := json.Marshal(reasons)
		a.PutStr(otlp.AttrFinishReasons, string(b))
	}
}
