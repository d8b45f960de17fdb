package exporter

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/otlp"
)

// vllmSpan is one request as vLLM's llm_request span describes it.
type vllmSpan struct {
	model            string // gen_ai.response.model; "" leaves it out (vLLM V1)
	ttft, e2e, queue float64
	decode           float64 // 0 leaves gen_ai.latency.time_in_model_decode out
	tokens           int64
	reasons          string // gen_ai.response.finish_reasons, "" leaves it out
	errStatus        bool
	traceState       string
	name             string  // span name; "" means llm_request
	noE2E            bool    // another span of the trace, no request attributes
	badE2E           float64 // when not 0, e2e is this (impossible) value
}

func (s vllmSpan) attrs() []attribute.KeyValue {
	if s.noE2E {
		return nil
	}
	e2e := s.e2e
	if s.badE2E != 0 {
		e2e = s.badE2E
	}
	kv := []attribute.KeyValue{
		attribute.Float64(otlp.AttrTTFT, s.ttft),
		attribute.Float64(otlp.AttrE2E, e2e),
		attribute.Float64(otlp.AttrQueue, s.queue),
		attribute.Int64(otlp.AttrPromptTokens, 100),
		attribute.Int64(otlp.AttrCompletionTokens, s.tokens),
	}
	if s.model != "" {
		kv = append(kv, attribute.String(otlp.AttrModel, s.model))
	}
	if s.decode != 0 {
		kv = append(kv, attribute.Float64(otlp.AttrDecode, s.decode))
	}
	if s.reasons != "" {
		kv = append(kv, attribute.String(otlp.AttrFinishReasons, s.reasons))
	}
	return kv
}

// send exports the spans through the OpenTelemetry Go SDK's exporter as
// the named service, and shuts the provider down (which flushes).
func send(t *testing.T, exp sdktrace.SpanExporter, service string, spans []vllmSpan) {
	t.Helper()
	res := resource.NewSchemaless(semconv.ServiceName(service))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
	tracer := tp.Tracer("vllm.v1.engine.output_processor")
	for _, s := range spans {
		ctx := context.Background()
		if s.traceState != "" {
			ts, err := trace.ParseTraceState(s.traceState)
			if err != nil {
				t.Fatal(err)
			}
			parent := trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true,
			})
			ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
		}
		name := s.name
		if name == "" {
			name = otlp.SpanName
		}
		_, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(s.attrs()...))
		if s.errStatus {
			span.SetStatus(codes.Error, "engine error")
		}
		span.End()
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

const exactConfig = `
targets:
  - name: a
    url: URL_A
    traces: { service_name: vllm-a }
  - name: b
    url: URL_B
    traces: { service_name: vllm-b, model: served-b }
slos:
  - name: chat
    objectives:
      ttft: { threshold: 500ms, target: 0.99 }
      tpot: { threshold: 50ms, target: 0.95 }
      error: { target: 0.999 }
  - name: strict
    match: { targets: [a] }
    objectives:
      ttft: { threshold: 200ms, target: 0.99 }
      e2e: { threshold: 5s, target: 0.99 }
      queue: { threshold: 100ms, target: 0.99 }
`

// Spans sent through the SDK's real gRPC and HTTP exporters with vLLM's
// attribute names are judged one request at a time against every SLO, and
// the exported counters equal the counts worked out by hand below.
func TestExactGoodputFromRealOTLPExporters(t *testing.T) {
	// The SDK reports the receiver's partial successes to its error handler:
	// the sender is told which spans were not counted, and why.
	var senderMu sync.Mutex
	var senderErrs []string
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		senderMu.Lock()
		defer senderMu.Unlock()
		senderErrs = append(senderErrs, err.Error())
	}))
	defer otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
	engine := serveBody(t, fixture(t, "vllm/v1-kops-conformance-2026-03-qwen2.5-0.5b.prom"))
	yml := strings.NewReplacer("URL_A", engine.URL+"/a", "URL_B", engine.URL+"/b").Replace(exactConfig)
	load := func() (*config.Config, error) { return config.Parse([]byte(yml)) }
	ex := New(Options{Interval: 50 * time.Millisecond, Timeout: time.Second, NoJitter: true, Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	if err := ex.Start(ctx, load); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, ex: ex, web: newWeb(t, ex.Handler("/metrics", load))}
	recv := otlp.New(otlp.Options{Sink: ex})
	ex.Registry().MustRegister(recv)
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(recv.GRPCServerOptions()...)
	recv.RegisterGRPC(gs)
	go gs.Serve(gl)
	mux := http.NewServeMux()
	mux.Handle("/v1/traces", recv)
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		hs.Close()
		gs.Stop()
		cancel()
		ex.Wait()
	})
	// Wait for both targets' first scrape: the series of a target appear
	// once it has been tried.
	h.waitFor("first scrapes", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "a"}) >= 0 && value(m, "llm_up", map[string]string{"target": "b"}) >= 0
	})

	// Target a, model m (V0-style spans naming the model), over gRPC.
	// R1 meets everything: tpot = decode/(n−1) = 1.6/40 = 0.04.
	// R2 misses tpot only in chat (6.0/100 = 0.06), everything in strict.
	// R3 misses ttft only in chat (0.7), meets only e2e in strict.
	// R4 is an engine error: meets ttft and tpot (0.32/8 = 0.04, by the
	//    decode time; (e2e − ttft)/8 = 0.0625 would miss) but not error in
	//    chat; meets all of strict (which has no error objective).
	// R5 was aborted, without a decode time: tpot = (0.95 − 0.15)/20 =
	//    0.04; an abort is no failure without include_abort: good in both.
	// R6 generated one token: no tpot to miss; good in both.
	// Every request but R1, R5 and R6 meets some objectives of chat and
	// not all of them: the per-objective counters count it good where it
	// met, goodput does not. From the marginals alone (5/6 each) the
	// Fréchet bounds would be 3..5 requests; exact is 3. For strict (4/6,
	// 5/6, 4/6) they would be 1..4; exact is 4.
	a := []vllmSpan{
		{model: "m", ttft: 0.1, e2e: 2.1, queue: 0.05, decode: 1.6, tokens: 41, reasons: `["stop"]`},
		{model: "m", ttft: 0.3, e2e: 6.3, queue: 0.2, decode: 6.0, tokens: 101, reasons: `["length"]`},
		{model: "m", ttft: 0.7, e2e: 1.7, queue: 0.6, decode: 1.0, tokens: 26, reasons: `["stop"]`},
		{model: "m", ttft: 0.1, e2e: 0.6, queue: 0.01, decode: 0.32, tokens: 9, reasons: `["error"]`},
		{model: "m", ttft: 0.15, e2e: 0.95, queue: 0.02, tokens: 21, reasons: `["abort"]`},
		{model: "m", ttft: 0.18, e2e: 0.2, queue: 0.05, tokens: 1, reasons: `["stop"]`},
		{name: "http_request", noE2E: true},                         // not a request span
		{model: "m", ttft: 0.1, badE2E: -1, queue: 0.05, tokens: 3}, // malformed
	}
	ge, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpoint(gl.Addr().String()), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	send(t, ge, "vllm-a", a)

	// Target b (V1-style spans without a model: traces.model names it),
	// over HTTP protobuf. R1 and R2 as above; R7 is R1 with an error
	// status; R8 is R1 from a stream sampled at one half (ot=th:8).
	b := []vllmSpan{a[0], a[1], a[0], a[0]}
	for i := range b {
		b[i].model = ""
	}
	b[2].errStatus = true
	b[3].traceState = "ot=th:8"
	he, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(hs.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	send(t, he, "vllm-b", b)

	// A service no target claims.
	he2, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(hs.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	send(t, he2, "nobody", a[:1])

	// The span outcome counters are counted after a batch is folded, so a
	// render can fall between the two: wait for both.
	mfs := h.waitFor("exact series", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_goodput_traced_requests_total", map[string]string{"target": "b", "slo": "chat", "sampled": "true"}) == 1 &&
			value(m, "llm_goodput_traced_requests_total", map[string]string{"target": "a", "slo": "strict"}) == 6 &&
			value(m, "goodput_exporter_otlp_spans_total", map[string]string{"result": "folded"}) == 10 &&
			value(m, "goodput_exporter_otlp_spans_total", map[string]string{"result": "unmatched"}) == 1
	})
	type want struct {
		name   string
		labels map[string]string
		v      float64
	}
	l := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, w := range []want{
		// chat on a/m: ttft good R1 R2 R4 R5 R6; tpot good R1 R3 R4 R5 R6;
		// error good all but R4; all three: R1 R5 R6 = 3 requests,
		// 41 + 21 + 1 = 63 tokens, of 6 requests and 199 tokens.
		{"llm_slo_traced_requests_total", l("target", "a", "model", "m", "slo", "chat", "objective", "ttft", "sampled", "false"), 6},
		{"llm_slo_traced_good_requests_total", l("target", "a", "model", "m", "slo", "chat", "objective", "ttft", "sampled", "false"), 5},
		{"llm_slo_traced_good_requests_total", l("target", "a", "model", "m", "slo", "chat", "objective", "tpot", "sampled", "false"), 5},
		{"llm_slo_traced_good_requests_total", l("target", "a", "model", "m", "slo", "chat", "objective", "error", "sampled", "false"), 5},
		{"llm_goodput_requests_total", l("target", "a", "model", "m", "slo", "chat", "bound", "exact"), 3},
		{"llm_goodput_tokens_total", l("target", "a", "model", "m", "slo", "chat", "bound", "exact"), 63},
		{"llm_goodput_traced_requests_total", l("target", "a", "model", "m", "slo", "chat", "sampled", "false"), 6},
		{"llm_goodput_traced_tokens_total", l("target", "a", "model", "m", "slo", "chat", "sampled", "false"), 199},
		// strict on a/m: ttft ≤ 0.2 R1 R4 R5 R6; e2e ≤ 5 all but R2;
		// queue ≤ 0.1 R1 R4 R5 R6; all three: R1 R4 R5 R6 = 4 requests,
		// 41 + 9 + 21 + 1 = 72 tokens.
		{"llm_slo_traced_good_requests_total", l("target", "a", "slo", "strict", "objective", "ttft"), 4},
		{"llm_slo_traced_good_requests_total", l("target", "a", "slo", "strict", "objective", "e2e"), 5},
		{"llm_slo_traced_good_requests_total", l("target", "a", "slo", "strict", "objective", "queue"), 4},
		{"llm_goodput_requests_total", l("target", "a", "slo", "strict", "bound", "exact"), 4},
		{"llm_goodput_tokens_total", l("target", "a", "slo", "strict", "bound", "exact"), 72},
		// chat on b/served-b: R1 good; R2 misses tpot; R7 failed (error
		// status): 1 of 3, 41 tokens. R8 alone in the sample: 1 of 1.
		{"llm_goodput_traced_requests_total", l("target", "b", "model", "served-b", "slo", "chat", "sampled", "false"), 3},
		{"llm_goodput_requests_total", l("target", "b", "model", "served-b", "slo", "chat", "bound", "exact"), 1},
		{"llm_goodput_tokens_total", l("target", "b", "model", "served-b", "slo", "chat", "bound", "exact"), 41},
		{"llm_slo_traced_good_requests_total", l("target", "b", "slo", "chat", "objective", "error", "sampled", "false"), 2},
		{"llm_goodput_requests_total", l("target", "b", "slo", "chat", "bound", "sampled"), 1},
		{"llm_goodput_traced_requests_total", l("target", "b", "slo", "chat", "sampled", "true"), 1},
		// strict applies to target a only.
		{"llm_goodput_traced_requests_total", l("target", "b", "slo", "strict"), -1},
		// Outcomes: 6 + 4 folded, one not a request, one malformed, one
		// from a service no target claims.
		{"goodput_exporter_otlp_spans_total", l("result", "folded"), 10},
		{"goodput_exporter_otlp_spans_total", l("result", "not_request"), 1},
		{"goodput_exporter_otlp_spans_total", l("result", "malformed"), 1},
		{"goodput_exporter_otlp_spans_total", l("result", "unmatched"), 1},
	} {
		if got := value(mfs, w.name, w.labels); got != w.v {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.v)
		}
	}

	senderMu.Lock()
	told := strings.Join(senderErrs, "\n")
	senderMu.Unlock()
	for _, want := range []string{"1 request spans not counted (first reason: malformed)", "1 request spans not counted (first reason: unmatched)"} {
		if !strings.Contains(told, want) {
			t.Errorf("the sender was not told %q; it was told:\n%s", want, told)
		}
	}

	// A reload that rebuilds target a (a new timeout) keeps its exact
	// counts, and its spans still reach it.
	cfg, err := config.Parse([]byte(strings.Replace(yml, "traces: { service_name: vllm-a }", "timeout: 2s\n    traces: { service_name: vllm-a }", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.ApplyConfig(cfg); err != nil {
		t.Fatal(err)
	}
	ge2, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpoint(gl.Addr().String()), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	send(t, ge2, "vllm-a", a[:1])
	h.waitFor("exact counts after a reload", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_goodput_requests_total", l("target", "a", "slo", "chat", "bound", "exact")) == 4 &&
			value(m, "llm_goodput_traced_requests_total", l("target", "a", "slo", "chat", "sampled", "false")) == 7
	})
}

// A resource is matched by the explicit selector, then by pod and
// namespace, then by sender address; two candidates at one step are
// ambiguous and nothing is guessed.
func TestTraceMatching(t *testing.T) {
	e := New(Options{Interval: time.Hour, Timeout: time.Second})
	mk := func(tc config.Target) *target {
		tc.Engine, tc.ModelLimit, tc.MaxBodySize = "vllm", 10, 1<<20
		tg, err := newTarget(tc, time.Second, nil, e)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	a := mk(config.Target{Name: "a", URL: "http://10.0.0.1:8000/metrics", Traces: &config.Traces{ServiceName: "svc-a"}})
	b := mk(config.Target{Name: "b", URL: "http://engine-b:8000/metrics", Pod: "p", Namespace: "n"})
	c := mk(config.Target{Name: "c", URL: "http://10.1.2.3:8000/metrics"})
	d := mk(config.Target{Name: "d", URL: "http://10.1.2.3:9000/metrics"})
	f := mk(config.Target{Name: "f", URL: "http://[fd00::5]:8000/metrics"})
	g := mk(config.Target{Name: "g", URL: "http://10.9.9.9:8000/metrics", Traces: &config.Traces{ServiceName: "svc-g"}})
	e.targets = map[string]*target{"a": a, "b": b, "c": c, "d": d, "f": f, "g": g}
	ip := netip.MustParseAddr
	for _, tc := range []struct {
		name string
		res  otlp.Resource
		want *target
		why  string
	}{
		{"selector", otlp.Resource{ServiceName: "svc-a", Pod: "p", Namespace: "n", Peer: ip("10.1.2.3")}, a, ""},
		{"pod", otlp.Resource{ServiceName: "vllm", Pod: "p", Namespace: "n"}, b, ""},
		{"pod in another namespace", otlp.Resource{Pod: "p", Namespace: "m"}, nil, otlp.ResultUnmatched},
		{"host name", otlp.Resource{Host: "Engine-B"}, b, ""},
		{"an address in host.name is not a host name", otlp.Resource{Host: "10.0.0.1"}, nil, otlp.ResultUnmatched},
		{"address shared by two targets", otlp.Resource{Peer: ip("10.1.2.3")}, nil, otlp.ResultAmbiguous},
		{"IPv6 address", otlp.Resource{Peer: ip("fd00::5")}, f, ""},
		{"address of a target with a selector", otlp.Resource{Peer: ip("10.9.9.9")}, nil, otlp.ResultUnmatched},
		{"loopback says nothing", otlp.Resource{Peer: ip("127.0.0.1")}, nil, otlp.ResultUnmatched},
		{"nothing", otlp.Resource{}, nil, otlp.ResultUnmatched},
	} {
		d, why := e.Match(&tc.res)
		var got *target
		if d != nil {
			got = d.(*target)
		}
		if got != tc.want || why != tc.why {
			name := "<nil>"
			if got != nil {
				name = got.cfg.Name
			}
			t.Errorf("%s: %s %q", tc.name, name, why)
		}
	}
}

// The self-check compares the good spans that arrived since its base
// reading with the histogram bounds over the same requests, lag- and
// edge-aware; hand-worked readings of one e2e objective.
func TestExactWithinBoundsReadings(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	read := func(s int, r, failed, good, edge, exact float64) boundReading {
		return boundReading{at: at(s), w: goodput.WindowTotals{Requests: r, Failed: failed, Good: []float64{good}}, edge: edge, good: exact}
	}
	var b boundSums
	steps := []struct {
		r    boundReading
		want float64
	}{
		// The first reading: nothing to say yet.
		{read(0, 0, 0, 0, 2, 0), -1},
		// 10 s on, the base: 5 spans arrived, of requests that finished
		// after the first reading; at most 80 + 2 + 2 of them are good.
		{read(10, 100, 20, 80, 2, 5), 1},
		// No reading is yet 10 s old after the base: no lower side;
		// 78 good since the base, at most 160 + 2 + 3.
		{read(20, 200, 40, 160, 3, 83), 1},
		// 158 since the base; the spans of the requests that finished
		// by the 20 s reading have all arrived: at least 80 − 2 − 3 = 75;
		// at most 240 + 2 + 1.
		{read(30, 300, 60, 240, 1, 163), 1},
		// The spans stop being good while the histograms count 80 more:
		// at least 160 − 2 − 1 = 157, and 158 is still enough.
		{read(40, 400, 80, 320, 1, 163), 1},
		// At least 240 − 2 − 1 = 237 by now: the traces say 158. One side
		// is wrong.
		{read(50, 500, 100, 400, 1, 163), 0},
	}
	for i, st := range steps {
		b.judge(st.r)
		if b.verdict != st.want {
			t.Errorf("reading %d: verdict %v, want %v", i, b.verdict, st.want)
		}
	}
	// Too many good spans: more than the upper bound over every request
	// since the first reading (500 + 2 + 1) is wrong too.
	b = boundSums{}
	for _, r := range []boundReading{read(0, 0, 0, 0, 2, 0), read(10, 100, 0, 100, 1, 0), read(20, 200, 0, 200, 1, 204)} {
		b.judge(r)
	}
	if b.verdict != 0 {
		t.Errorf("204 good spans against at most 200 + 2 + 1: verdict %v", b.verdict)
	}
	// The joint's totals starting over (a reload that changed the SLO)
	// start the readings over too.
	b.judge(read(30, 10, 0, 10, 0, 300))
	if b.verdict != -1 {
		t.Errorf("after the totals started over: verdict %v, want -1 (no verdict)", b.verdict)
	}

	// The verdict is what the gauge says, and no gauge without one.
	e := New(Options{Interval: time.Hour, Timeout: time.Second})
	slos := []goodput.SLO{{Name: "s", Objectives: []goodput.Objective{{Kind: goodput.KindE2E, Threshold: 1, Target: 0.9}}}}
	tg, err := newTarget(config.Target{Name: "t", URL: "http://10.0.0.1/metrics", Engine: "vllm", ModelLimit: 10, MaxBodySize: 1 << 20}, time.Second, slos, e)
	if err != nil {
		t.Fatal(err)
	}
	tg.exact.Fold(&goodput.TracedRequest{Model: "m", E2E: 0.5, CompletionTokens: 2})
	within := func() float64 {
		var sink collector.ConstSink
		tg.exactMetrics(&sink, "vllm")
		for _, m := range sink {
			if strings.Contains(m.Desc().String(), "llm_goodput_exact_within_bounds") {
				var pb dto.Metric
				m.Write(&pb)
				return pb.GetGauge().GetValue()
			}
		}
		return -1
	}
	for _, v := range []float64{-1, 0, 1} {
		tg.bounds = map[string]*boundSums{"m\x00s": {verdict: v}}
		if got := within(); got != v {
			t.Errorf("verdict %v exported as %v (-1: absent)", v, got)
		}
	}
}

// The status page shows exact goodput beside the bounds over the same
// requests, with the figures and the verdict of the self-check itself:
// where the gauge reads 0 the page says exact is outside its bounds, and
// where it reads 1, within them. It used to show the exact share over
// every traced request beside bounds over the last interval, other
// requests, which could disagree with each other and with the gauge.
func TestStatusExactIsTheSelfChecksComparison(t *testing.T) {
	e := New(Options{Interval: time.Hour, Timeout: time.Second})
	slos := []goodput.SLO{{Name: "s", Objectives: []goodput.Objective{{Kind: goodput.KindE2E, Threshold: 1, Target: 0.9}}}}
	tg, err := newTarget(config.Target{Name: "t", URL: "http://10.0.0.1/metrics", Engine: "vllm", ModelLimit: 10, MaxBodySize: 1 << 20}, time.Second, slos, e)
	if err != nil {
		t.Fatal(err)
	}
	tg.exact.Fold(&goodput.TracedRequest{Model: "m", E2E: 0.5, CompletionTokens: 2})
	x := tg.exact.Model("m").SLOs[0]
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	read := func(s int, r, good, edge, exact float64) boundReading {
		return boundReading{at: at(s), w: goodput.WindowTotals{Requests: r, Good: []float64{good}}, edge: edge, good: exact}
	}
	b := &boundSums{verdict: -1} // as a model's first reading leaves it
	tg.bounds = map[string]*boundSums{"m\x00s": b}
	if got := tg.exactBeside("m", "s", x); !strings.Contains(got, "100.0 % of 1 traced requests") {
		t.Errorf("before the self-check's readings: %q", got)
	}
	// The readings of TestExactWithinBoundsReadings, worked by hand there:
	// at 30 s, 158 good since the base (10 s) against 80 − 2 − 3 = 75 and
	// 240 + 2 + 1 = 243; at 50 s, 158 against at least 237.
	for _, r := range []boundReading{read(0, 0, 0, 2, 0), read(10, 100, 80, 2, 5), read(20, 200, 160, 3, 83), read(30, 300, 240, 1, 163)} {
		b.judge(r)
	}
	want := "158 good requests traced since 00:00:10 UTC; bounds over the same requests 75–243 (widened by 5 and 3 requests in flight at the edges, spans up to 10 s late): within them"
	if got := tg.exactBeside("m", "s", x); got != want || b.verdict != 1 {
		t.Errorf("verdict %v, page %q\nwant %q", b.verdict, got, want)
	}
	for _, r := range []boundReading{read(40, 400, 320, 1, 163), read(50, 500, 400, 1, 163)} {
		b.judge(r)
	}
	if got := tg.exactBeside("m", "s", x); b.verdict != 0 || !strings.Contains(got, "158 good requests") || !strings.Contains(got, "237–") ||
		!strings.Contains(got, "OUTSIDE them (llm_goodput_exact_within_bounds 0)") {
		t.Errorf("verdict %v, page %q", b.verdict, got)
	}
}
