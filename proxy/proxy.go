package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"syscall"
	"time"
)

// Defaults of the limits in Options.
const (
	// DefaultMaxRequestBody caps the body of a measured request, which is
	// read whole to find its model and stream flag: 32 MiB holds a
	// million-token prompt as text. Larger ones are refused with 413.
	DefaultMaxRequestBody = 32 << 20
	// DefaultMaxEvent caps one server-sent event held while it is parsed;
	// a longer one is forwarded unparsed and the stream is malformed.
	DefaultMaxEvent = 1 << 20
	// DefaultMaxResponseBody caps the non-streaming response body kept to
	// read its usage; past it the body is still forwarded whole, and the
	// tokens are an estimate.
	DefaultMaxResponseBody = 8 << 20
	// DefaultHeaderTimeout is how long the upstream may take to answer
	// with its response headers (vLLM and SGLang send them before the
	// first token of a stream, after the whole answer otherwise).
	DefaultHeaderTimeout = 10 * time.Minute
)

// Options configure a Proxy.
type Options struct {
	// Upstream is the engine's base URL.
	Upstream *url.URL
	// Timeout caps a measured request from arrival to its last byte;
	// 0 means none. HeaderTimeout caps the wait for the response headers;
	// 0 means DefaultHeaderTimeout.
	Timeout, HeaderTimeout time.Duration
	// MaxRequestBody, MaxEvent and MaxResponseBody are the bounds above;
	// 0 means the defaults.
	MaxRequestBody, MaxEvent, MaxResponseBody int64
	// InjectUsage asks a stream for its usage (stream_options.include_usage)
	// when the client did not, and strips that usage-only chunk from what
	// the client receives. Off, a stream without usage has estimated tokens.
	InjectUsage bool
	// Sink receives each measured request; nil drops them.
	Sink func(*Record)
	// Transport reaches the upstream; nil means a clone of
	// http.DefaultTransport with HeaderTimeout.
	Transport http.RoundTripper
	Logger    *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Proxy forwards to one upstream and measures its completion requests.
type Proxy struct {
	opts    Options
	rp      *httputil.ReverseProxy // measured requests
	pass    *httputil.ReverseProxy // everything else
	Metrics *Metrics
}

// New returns a proxy; its Metrics are to be registered by the caller.
func New(o Options) (*Proxy, error) {
	if o.Upstream == nil || o.Upstream.Host == "" {
		return nil, errors.New("upstream URL needs a scheme and host")
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.MaxRequestBody <= 0 {
		o.MaxRequestBody = DefaultMaxRequestBody
	}
	if o.MaxEvent <= 0 {
		o.MaxEvent = DefaultMaxEvent
	}
	if o.MaxResponseBody <= 0 {
		o.MaxResponseBody = DefaultMaxResponseBody
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = o.HeaderTimeout
		t.MaxIdleConnsPerHost = 1024
		o.Transport = t
	}
	p := &Proxy{opts: o, Metrics: NewMetrics()}
	rewrite := func(pr *httputil.ProxyRequest) {
		pr.SetURL(o.Upstream)
		pr.Out.Host = pr.In.Host
		pr.SetXForwarded()
	}
	errLog := slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug)
	p.pass = &httputil.ReverseProxy{Rewrite: rewrite, Transport: o.Transport, ErrorLog: errLog}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        rewrite,
		Transport:      o.Transport,
		ErrorLog:       errLog,
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.errorHandler,
	}
	return p, nil
}

// SetSink sets where measured requests go; call before serving.
func (p *Proxy) SetSink(sink func(*Record)) { p.opts.Sink = sink }

// Measured reports whether a request is one the proxy measures.
func Measured(r *http.Request) bool {
	return r.Method == http.MethodPost && (r.URL.Path == "/v1/completions" || r.URL.Path == "/v1/chat/completions")
}

type ctxKey struct{}

// ServeHTTP forwards the request; completion requests are measured.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !Measured(r) {
		p.Metrics.passthrough.Inc()
		p.pass.ServeHTTP(w, r)
		return
	}
	s := &stream{p: p, rec: Record{Arrival: p.opts.Now()}, clientCtx: r.Context()}
	s.rec.TraceID, s.rec.ParentSpanID = traceParent(r.Header.Get("traceparent"))
	p.Metrics.active.Inc()
	defer p.Metrics.active.Dec()
	// The finish runs even when the reverse proxy aborts the client's
	// connection (it panics with http.ErrAbortHandler after an upstream
	// read error), so that every measured request is recorded once.
	defer s.finish()

	body, err := readCapped(r.Body, p.opts.MaxRequestBody)
	if err != nil {
		if errors.Is(err, errTooLarge) {
			s.rec.Outcome, s.rec.Reason, s.rec.Status = OutcomeRejected, "request_too_large", http.StatusRequestEntityTooLarge
			http.Error(w, fmt.Sprintf("request body over %d bytes (--max-request-body)", p.opts.MaxRequestBody), http.StatusRequestEntityTooLarge)
			return
		}
		s.rec.Outcome = OutcomeClientAbort
		return
	}
	p.Metrics.requestBytes.Add(float64(len(body)))
	body = s.readRequest(body, p.opts.InjectUsage)
	ctx := context.WithValue(r.Context(), ctxKey{}, s)
	if p.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.opts.Timeout)
		defer cancel()
	}
	out := r.WithContext(ctx)
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.Header = r.Header.Clone()
	out.Header.Del("Content-Length")
	// The proxy must read the answer: without the client's
	// Accept-Encoding the transport asks for gzip itself and hands back
	// the body decompressed, which the client then receives as such.
	out.Header.Del("Accept-Encoding")
	out.GetBody = nil
	s.ctx = ctx
	p.Metrics.addedRequest.Observe(p.opts.Now().Sub(s.rec.Arrival).Seconds())
	p.rp.ServeHTTP(&flushWriter{ResponseWriter: w, s: s}, out)
}

// modifyResponse wraps the upstream's body in the measuring reader.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	s, _ := resp.Request.Context().Value(ctxKey{}).(*stream)
	if s == nil {
		return nil
	}
	s.onResponse(resp)
	return nil
}

// errorHandler answers when the upstream gave no response: refused,
// reset, timed out, or the client went away first.
func (p *Proxy) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	s, _ := r.Context().Value(ctxKey{}).(*stream)
	if s != nil {
		s.fail(err)
	}
	code := http.StatusBadGateway
	if s != nil && s.rec.Outcome == OutcomeTimeout {
		code = http.StatusGatewayTimeout
	}
	if s != nil && s.rec.Outcome == OutcomeClientAbort {
		return // nobody to answer
	}
	w.WriteHeader(code)
}

// classify names an upstream failure: the outcome and its reason.
func (s *stream) classify(err error) (outcome, reason string) {
	if s.clientCtx.Err() != nil {
		return OutcomeClientAbort, ""
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return OutcomeTimeout, ""
	case errors.Is(err, syscall.ECONNREFUSED):
		return OutcomeUpstreamError, ReasonRefused
	}
	return OutcomeUpstreamError, ReasonReset
}

var errTooLarge = errors.New("too large")

// readCapped reads a body of at most limit bytes.
func readCapped(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errTooLarge
	}
	return b, nil
}

// flushWriter times each flush of a measured response: the gap between
// reading a chunk from the upstream and handing it to the client is the
// latency the proxy adds to it.
type flushWriter struct {
	http.ResponseWriter
	s *stream
}

func (f *flushWriter) Flush() {
	if rc, ok := f.ResponseWriter.(http.Flusher); ok {
		rc.Flush()
	}
	if t := f.s.takeReadTime(); !t.IsZero() {
		f.s.p.Metrics.addedChunk.Observe(f.s.p.opts.Now().Sub(t).Seconds())
	}
}

func (f *flushWriter) Unwrap() http.ResponseWriter { return f.ResponseWriter }
