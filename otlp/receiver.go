// Package otlp receives OpenTelemetry request traces from inference
// engines (vLLM's per-request llm_request span) over OTLP, gRPC and HTTP
// (/v1/traces, binary or JSON protobuf), and folds each request span into
// its target's exact goodput counters as it arrives. Decoding is the
// OpenTelemetry collector's pdata; no span is stored: a batch is decoded,
// judged request by request and dropped. Requests and messages are capped
// in size, requests in flight in number and bytes, copies of a span
// delivered again are recognised by its ids over a bounded window, and
// every span that is not folded is counted with the reason.
package otlp

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // engines may compress their exports
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// DefaultMaxRequestSize caps one export request, decompressed: the
// OpenTelemetry SDKs batch 512 spans by default, a few hundred KiB.
const DefaultMaxRequestSize = 4 << 20

// Resource is what identifies the sender of a batch of spans.
type Resource struct {
	// Peer is the sender's address; invalid when unknown.
	Peer netip.Addr
	// Resource attributes (empty when absent).
	ServiceName, Pod, Namespace, Host string
}

// Sink places the requests of a resource.
type Sink interface {
	// Match returns the one destination of the resource's requests, or
	// nil and the outcome that says why there is none (ResultUnmatched or
	// ResultAmbiguous).
	Match(res *Resource) (Dest, string)
}

// Dest folds requests into one target's exact counters.
type Dest interface {
	// Fold judges the requests; it calls drop with the outcome
	// (ResultNoModel, ResultModelLimit) of each request it could not place.
	Fold(reqs []goodput.TracedRequest, drop func(result string))
}

// Options configure a receiver.
type Options struct {
	Sink Sink
	// MaxRequestSize caps one request body or gRPC message, after
	// decompression; 0 means DefaultMaxRequestSize.
	MaxRequestSize int64
	// MaxInflightRequests and MaxInflightBytes cap the export requests
	// being served at once and the bytes they hold, for each transport
	// apart (an HTTP body as read; a gRPC message once gRPC has read it,
	// its stream holding a request slot from its headers); 0 means the
	// defaults.
	MaxInflightRequests int
	MaxInflightBytes    int64
	// DedupWindow and DedupSpans bound the duplicate filter: a copy of a
	// span is recognised within DedupWindow of the first, among the last
	// DedupSpans/2 to DedupSpans spans; 0 means the defaults.
	DedupWindow time.Duration
	DedupSpans  int
	// MaxCompletionTokens is the most tokens one request span may claim;
	// 0 means DefaultMaxCompletionTokens.
	MaxCompletionTokens float64
	Logger              *slog.Logger
}

// Transports and the reasons a whole export request is refused, the
// labels of goodput_exporter_otlp_rejected_requests_total.
const (
	TransportHTTP = "http"
	TransportGRPC = "grpc"

	RejectTooLarge  = "too_large"
	RejectMalformed = "malformed"
	RejectMedia     = "unsupported_media_type"
	RejectMethod    = "method_not_allowed"
)

// rejectReasons are the reasons of goodput_exporter_otlp_rejected_requests_total.
var rejectReasons = []string{RejectTooLarge, RejectMalformed, RejectMedia, RejectMethod, RejectInflight}

// Receiver decodes OTLP trace exports and folds their request spans.
type Receiver struct {
	opts        Options
	spans       [9]atomic.Uint64 // by index in Results
	implausible [7]atomic.Uint64 // by index in Reasons
	rejected    sync.Map         // transport+"\x00"+reason -> *atomic.Uint64
	batches     sync.Pool
	dedup       *dedup
	// The transports' budgets are apart, so that neither can starve the
	// other: a flood of gRPC streams leaves HTTP exports their own.
	httpLimit, grpcLimit inflight
	guard                resetGuard

	spansDesc, rejectedDesc, implausibleDesc, inflightReqDesc, inflightBytesDesc, dedupDesc, resetFloodDesc *prometheus.Desc
}

// New returns a receiver.
func New(o Options) *Receiver {
	if o.MaxRequestSize <= 0 {
		o.MaxRequestSize = DefaultMaxRequestSize
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxInflightRequests <= 0 {
		o.MaxInflightRequests = DefaultMaxInflightRequests
	}
	if o.MaxInflightBytes <= 0 {
		o.MaxInflightBytes = DefaultMaxInflightBytes
	}
	if o.MaxCompletionTokens <= 0 {
		o.MaxCompletionTokens = DefaultMaxCompletionTokens
	}
	r := &Receiver{
		opts:      o,
		dedup:     newDedup(o.DedupWindow, o.DedupSpans),
		httpLimit: inflight{maxReqs: o.MaxInflightRequests, maxBytes: o.MaxInflightBytes},
		grpcLimit: inflight{maxReqs: grpcSlots(o.MaxInflightRequests, o.MaxInflightBytes, o.MaxRequestSize), maxBytes: o.MaxInflightBytes},
		batches:   sync.Pool{New: func() any { s := make([]goodput.TracedRequest, 0, 64); return &s }},
		spansDesc: prometheus.NewDesc("goodput_exporter_otlp_spans_total",
			"Spans received over OTLP, by outcome: folded into a target's exact goodput, not_request (another span of the trace), malformed (a request span with a missing or impossible value, or without trace and span ids), implausible (a value no request can have: the reason in goodput_exporter_otlp_implausible_spans_total), duplicate (a copy of a span read in the last --otlp.dedup-window, delivered again: counted once), unmatched or ambiguous (no target, or several, match its resource and sender), no_model (neither the span nor the target names the model), model_limit (a new model past the target's model_limit, or past the few slots for models its engine has not shown).",
			[]string{"result"}, nil),
		rejectedDesc: prometheus.NewDesc("goodput_exporter_otlp_rejected_requests_total",
			"Whole OTLP export requests refused before any span was read: too_large (over --otlp.max-request-size), malformed (not a trace export in the declared encoding), unsupported_media_type, method_not_allowed, over_inflight_limit (past --otlp.max-inflight-requests or --otlp.max-inflight-bytes: HTTP 429, gRPC RESOURCE_EXHAUSTED, the sender retries).",
			[]string{"transport", "reason"}, nil),
		implausibleDesc: prometheus.NewDesc("goodput_exporter_otlp_implausible_spans_total",
			"Request spans refused because a value cannot be true, by reason: completion_tokens_over_max_tokens (more than the request's gen_ai.request.max_tokens times its sequences), completion_tokens_over_ceiling (over --otlp.max-completion-tokens), latency_over_a_day, model_name_too_long (over 256 bytes), time_before_2000 (a start time before 2000, or unset), time_over_a_day_ahead (an end more than a day after the daemon's clock), end_before_start.",
			[]string{"reason"}, nil),
		inflightReqDesc: prometheus.NewDesc("goodput_exporter_otlp_inflight_requests",
			"OTLP export requests being served now, by transport (at most --otlp.max-inflight-requests each; a gRPC stream from before its message is read).", []string{"transport"}, nil),
		inflightBytesDesc: prometheus.NewDesc("goodput_exporter_otlp_inflight_bytes",
			"Bytes the OTLP export requests being served hold now, by transport, as charged against --otlp.max-inflight-bytes (each transport its own): an HTTP body as read, a gRPC message once gRPC has read it.", []string{"transport"}, nil),
		resetFloodDesc: prometheus.NewDesc("goodput_exporter_otlp_grpc_reset_flood_connections_total",
			"gRPC connections the OTLP receiver closed because their client cancelled more than 100 streams in one second (HTTP/2 rapid reset).", nil, nil),
		dedupDesc: prometheus.NewDesc("goodput_exporter_otlp_dedup_spans",
			"Spans the duplicate filter remembers now (at most --otlp.dedup-max-spans, 8-byte hashes).", nil, nil),
	}
	r.guard.conns = map[string]*guardedConn{}
	return r
}

// Outcome counts what became of the spans of one export request.
type Outcome struct {
	// Duplicate spans are copies of spans read before: accepted, and
	// counted once, so not reported to the sender as rejected.
	Folded, NotRequest, Duplicate, Dropped int
	// First names the first reason a span was dropped, for the response.
	First string
}

// Consume folds the request spans of one decoded export request sent from
// peer (invalid when unknown).
func (r *Receiver) Consume(peerAddr netip.Addr, td ptrace.Traces) Outcome {
	var out Outcome
	bp := r.batches.Get().(*[]goodput.TracedRequest)
	defer r.batches.Put(bp)
	count := func(result string, n int) {
		if n == 0 {
			return
		}
		for i, x := range Results {
			if x == result {
				r.spans[i].Add(uint64(n))
			}
		}
		switch result {
		case ResultFolded:
			out.Folded += n
		case ResultNotRequest:
			out.NotRequest += n
		case ResultDuplicate:
			out.Duplicate += n
		default:
			out.Dropped += n
			if out.First == "" {
				out.First = result
			}
		}
	}
	now := time.Now()
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		batch := (*bp)[:0]
		malformed, notReq, implaus, dup := 0, 0, 0, 0
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				span := spans.At(k)
				req, result := Request(span)
				switch result {
				case ResultFolded:
				case ResultMalformed:
					malformed++
					continue
				default:
					notReq++
					continue
				}
				if why := implausible(span, &req, r.opts.MaxCompletionTokens, now); why != "" {
					implaus++
					r.implausible[slices.Index(Reasons, why)].Add(1)
					continue
				}
				// A span is remembered once read, whatever becomes of it
				// below: a copy is dropped as the first was.
				if r.dedup.seen(span.TraceID(), span.SpanID()) {
					dup++
					continue
				}
				batch = append(batch, req)
			}
		}
		*bp = batch
		count(ResultMalformed, malformed)
		count(ResultNotRequest, notReq)
		count(ResultImplausible, implaus)
		count(ResultDuplicate, dup)
		if len(batch) == 0 {
			continue
		}
		res := resourceOf(rs, peerAddr)
		var dest Dest
		why := ResultUnmatched
		if r.opts.Sink != nil {
			dest, why = r.opts.Sink.Match(&res)
		}
		if dest == nil {
			count(why, len(batch))
			continue
		}
		dropped := 0
		dest.Fold(batch, func(result string) {
			dropped++
			count(result, 1)
		})
		count(ResultFolded, len(batch)-dropped)
	}
	return out
}

func resourceOf(rs ptrace.ResourceSpans, peerAddr netip.Addr) Resource {
	res := Resource{Peer: peerAddr.Unmap()}
	attrs := rs.Resource().Attributes()
	str := func(k string) string {
		if v, ok := attrs.Get(k); ok {
			return v.AsString()
		}
		return ""
	}
	res.ServiceName, res.Pod, res.Namespace, res.Host = str(ResService), str(ResPod), str(ResNamespace), str(ResHost)
	return res
}

func (r *Receiver) reject(transport, reason string) {
	key := transport + "\x00" + reason
	v, _ := r.rejected.LoadOrStore(key, new(atomic.Uint64))
	v.(*atomic.Uint64).Add(1)
}

// response reports the spans that were not folded as rejected, as the
// OTLP specification's partial success asks, naming the first reason.
func response(o Outcome) ptraceotlp.ExportResponse {
	resp := ptraceotlp.NewExportResponse()
	if o.Dropped > 0 {
		ps := resp.PartialSuccess()
		ps.SetRejectedSpans(int64(o.Dropped))
		ps.SetErrorMessage(fmt.Sprintf("%d request spans not counted (first reason: %s); see goodput_exporter_otlp_spans_total", o.Dropped, o.First))
	}
	return resp
}

// ServeHTTP answers POST /v1/traces (any path it is mounted on) with
// application/x-protobuf or application/json bodies, optionally gzip.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		r.reject(TransportHTTP, RejectMethod)
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "OTLP traces are sent with POST", http.StatusMethodNotAllowed)
		return
	}
	ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if ct != ctProto && ct != ctJSON {
		r.reject(TransportHTTP, RejectMedia)
		http.Error(w, fmt.Sprintf("content type %q: want application/x-protobuf or application/json", ct), http.StatusUnsupportedMediaType)
		return
	}
	// Admit the request before reading its body, charged its declared
	// length and the byte that shows its end (or a first read's worth);
	// the charge grows as the body does.
	charge := int64(firstRead)
	if req.ContentLength >= 0 && req.Header.Get("Content-Encoding") == "" {
		charge = min(req.ContentLength, r.opts.MaxRequestSize) + 1
	}
	if !r.httpLimit.acquire(charge) {
		r.reject(TransportHTTP, RejectInflight)
		w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
		httpErrorCode(w, ct, http.StatusTooManyRequests, codes.ResourceExhausted, overloaded)
		return
	}
	defer func() { r.httpLimit.release(charge) }()
	body, status, err := r.readBody(w, req, &charge)
	if err != nil {
		reason := RejectMalformed
		switch status {
		case http.StatusRequestEntityTooLarge:
			reason = RejectTooLarge
		case http.StatusUnsupportedMediaType:
			reason = RejectMedia
		case http.StatusTooManyRequests:
			reason = RejectInflight
			w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
		}
		r.reject(TransportHTTP, reason)
		httpError(w, ct, status, err.Error())
		return
	}
	er := ptraceotlp.NewExportRequest()
	if ct == ctJSON {
		err = er.UnmarshalJSON(body)
	} else {
		err = er.UnmarshalProto(body)
	}
	if err != nil {
		r.reject(TransportHTTP, RejectMalformed)
		httpError(w, ct, http.StatusBadRequest, "not an OTLP trace export: "+err.Error())
		return
	}
	var addr netip.Addr
	if ap, err := netip.ParseAddrPort(req.RemoteAddr); err == nil {
		addr = ap.Addr()
	}
	resp := response(r.Consume(addr, er.Traces()))
	var out []byte
	if ct == ctJSON {
		out, err = resp.MarshalJSON()
	} else {
		out, err = resp.MarshalProto()
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Write(out)
}

const (
	ctProto = "application/x-protobuf"
	ctJSON  = "application/json"
)

// httpError answers with a google.rpc.Status in the request's encoding, as
// the OTLP/HTTP specification asks, so that the sender's exporter can log
// the message.
func httpError(w http.ResponseWriter, ct string, code int, msg string) {
	c := codes.InvalidArgument
	if code == http.StatusTooManyRequests {
		c = codes.ResourceExhausted
	}
	httpErrorCode(w, ct, code, c, msg)
}

func httpErrorCode(w http.ResponseWriter, ct string, code int, c codes.Code, msg string) {
	st := status.New(c, msg).Proto()
	var body []byte
	var err error
	if ct == ctJSON {
		body, err = protojson.Marshal(st)
	} else {
		body, err = proto.Marshal(st)
	}
	if err != nil {
		http.Error(w, msg, code)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(code)
	w.Write(body)
}

// readBody reads the body, decompressed, refusing more than the cap, and
// more than the in-flight bytes allow: *charge is what the request holds,
// grown with the buffer (429 when the growth is refused).
func (r *Receiver) readBody(w http.ResponseWriter, req *http.Request, charge *int64) ([]byte, int, error) {
	limit := r.opts.MaxRequestSize
	var src io.Reader = http.MaxBytesReader(w, req.Body, limit)
	switch req.Header.Get("Content-Encoding") {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, statusOf(err), fmt.Errorf("gzip body: %w", err)
		}
		defer zr.Close()
		src = zr
	default:
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("content encoding %q: want gzip or none", req.Header.Get("Content-Encoding"))
	}
	// The buffer is allocated at the charge and grown, doubling, only
	// after the charge has grown: its capacity never exceeds the charge.
	buf := make([]byte, 0, *charge)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("request over %d bytes decompressed (--otlp.max-request-size)", limit)
			}
			next := min(max(2*int64(cap(buf)), firstRead), limit+1)
			if !r.httpLimit.grow(next - *charge) {
				return nil, http.StatusTooManyRequests, errors.New(overloaded)
			}
			*charge = next
			buf = append(make([]byte, 0, next), buf...)
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, statusOf(err), fmt.Errorf("reading body: %w", err)
		}
	}
	if int64(len(buf)) > limit {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("request over %d bytes decompressed (--otlp.max-request-size)", limit)
	}
	return buf, 0, nil
}

// firstRead is what a body of unknown length is charged before it is read.
const firstRead = 64 << 10

func statusOf(err error) int {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

func peerOf(ctx context.Context) netip.Addr {
	if p, ok := peer.FromContext(ctx); ok {
		if ta, ok := p.Addr.(*net.TCPAddr); ok {
			return ta.AddrPort().Addr()
		}
	}
	return netip.Addr{}
}

// Describe implements prometheus.Collector.
func (r *Receiver) Describe(ch chan<- *prometheus.Desc) {
	ch <- r.spansDesc
	ch <- r.rejectedDesc
	ch <- r.implausibleDesc
	ch <- r.inflightReqDesc
	ch <- r.inflightBytesDesc
	ch <- r.dedupDesc
	ch <- r.resetFloodDesc
}

// Collect implements prometheus.Collector.
func (r *Receiver) Collect(ch chan<- prometheus.Metric) {
	for i, res := range Results {
		ch <- prometheus.MustNewConstMetric(r.spansDesc, prometheus.CounterValue, float64(r.spans[i].Load()), res)
	}
	// gRPC refuses oversized or undecodable messages inside the library,
	// before the receiver sees them, with ResourceExhausted or Internal; the
	// in-flight caps are the receiver's own, on both transports.
	for _, why := range rejectReasons {
		ch <- prometheus.MustNewConstMetric(r.rejectedDesc, prometheus.CounterValue, float64(r.Rejected(TransportHTTP, why)), TransportHTTP, why)
	}
	for _, why := range []string{RejectMalformed, RejectInflight} {
		ch <- prometheus.MustNewConstMetric(r.rejectedDesc, prometheus.CounterValue, float64(r.Rejected(TransportGRPC, why)), TransportGRPC, why)
	}
	for i, why := range Reasons {
		ch <- prometheus.MustNewConstMetric(r.implausibleDesc, prometheus.CounterValue, float64(r.implausible[i].Load()), why)
	}
	for _, t := range []struct {
		name string
		l    *inflight
	}{{TransportHTTP, &r.httpLimit}, {TransportGRPC, &r.grpcLimit}} {
		reqs, bytes := t.l.now()
		ch <- prometheus.MustNewConstMetric(r.inflightReqDesc, prometheus.GaugeValue, float64(reqs), t.name)
		ch <- prometheus.MustNewConstMetric(r.inflightBytesDesc, prometheus.GaugeValue, float64(bytes), t.name)
	}
	ch <- prometheus.MustNewConstMetric(r.dedupDesc, prometheus.GaugeValue, float64(r.dedup.size()))
	ch <- prometheus.MustNewConstMetric(r.resetFloodDesc, prometheus.CounterValue, float64(r.guard.closed.Load()))
}

// Rejected returns the count of whole requests refused for a reason.
func (r *Receiver) Rejected(transport, reason string) uint64 {
	if v, ok := r.rejected.Load(transport + "\x00" + reason); ok {
		return v.(*atomic.Uint64).Load()
	}
	return 0
}

// Implausible returns the count of spans refused for a reason (tests).
func (r *Receiver) Implausible(reason string) uint64 {
	if i := slices.Index(Reasons, reason); i >= 0 {
		return r.implausible[i].Load()
	}
	return 0
}

// ResetFloodClosed returns the gRPC connections closed for resetting too
// fast.
func (r *Receiver) ResetFloodClosed() uint64 { return r.guard.closed.Load() }

// GuardListener wraps the gRPC server's listener so that a connection
// whose client cancels more than MaxResetsPerSecond streams a second is
// closed.
func (r *Receiver) GuardListener(l net.Listener) net.Listener { return guardListener{l, &r.guard} }

// Inflight returns the requests and bytes in flight now, over both
// transports.
func (r *Receiver) Inflight() (int, int64) {
	hr, hb := r.httpLimit.now()
	gr, gb := r.grpcLimit.now()
	return hr + gr, hb + gb
}

// Spans returns the count of spans with the given outcome (tests).
func (r *Receiver) Spans(result string) uint64 {
	for i, x := range Results {
		if x == result {
			return r.spans[i].Load()
		}
	}
	return 0
}
