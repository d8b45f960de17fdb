package proxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/otlp"
)

// capture is an otlp.Sink that keeps every request the receiver decodes.
type capture struct {
	mu   sync.Mutex
	reqs []goodput.TracedRequest
	res  []otlp.Resource
}

func (c *capture) Match(res *otlp.Resource) (otlp.Dest, string) {
	c.mu.Lock()
	c.res = append(c.res, *res)
	c.mu.Unlock()
	return c, ""
}

func (c *capture) Fold(reqs []goodput.TracedRequest, drop func(string)) {
	c.mu.Lock()
	c.reqs = append(c.reqs, reqs...)
	c.mu.Unlock()
}

// The spans the proxy builds are read back by the daemon's own decoder
// into the values measured, with the judge's view of each outcome.
func TestSpansDecodeInTheReceiver(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	recs := []Record{
		{Arrival: t0, End: t0.Add(2 * time.Second), TTFT: 500 * time.Millisecond, HasTTFT: true, Tokens: 31, PromptTokens: 9, Model: "m", Outcome: OutcomeOK, FinishReasons: []string{"stop"}, MaxTokens: 64, N: 1, Stream: true},
		{Arrival: t0, End: t0.Add(time.Second), TTFT: 300 * time.Millisecond, HasTTFT: true, Tokens: 5, Estimated: true, PromptTokens: -1, Model: "m", Outcome: OutcomeClientAbort},
		{Arrival: t0, End: t0.Add(time.Second), PromptTokens: -1, Model: "m", Outcome: OutcomeUpstreamError, Reason: ReasonStatus, Status: 503},
		{Arrival: t0, End: t0.Add(3 * time.Second), PromptTokens: -1, Outcome: OutcomeTimeout},
	}
	c := &capture{}
	recv := otlp.New(otlp.Options{Sink: c})
	recv.Consume(netip.Addr{}, Spans(recs, Resource{ServiceName: "sglang-a", Pod: "p", Namespace: "ns"}))
	if len(c.reqs) != 4 || recv.Spans(otlp.ResultFolded) != 4 {
		t.Fatalf("folded %d: %+v", len(c.reqs), c.reqs)
	}
	if r := c.res[0]; r.ServiceName != "sglang-a" || r.Pod != "p" || r.Namespace != "ns" {
		t.Fatalf("resource %+v", r)
	}
	ok := c.reqs[0]
	if ok.E2E != 2 || ok.TTFT != 0.5 || !ok.HasTTFT || ok.CompletionTokens != 31 || ok.Model != "m" || ok.Failed || ok.Aborted || ok.TokensEstimated {
		t.Fatalf("ok %+v", ok)
	}
	if tpot, known := ok.TPOT(); !known || tpot != 1.5/30 {
		t.Fatalf("tpot %v %v", tpot, known)
	}
	ab := c.reqs[1]
	if !ab.Aborted || ab.Failed || !ab.TokensEstimated {
		t.Fatalf("abort %+v", ab)
	}
	if _, known := ab.TPOT(); known {
		t.Fatal("a tpot from estimated tokens is judged")
	}
	if e := c.reqs[2]; !e.Failed || e.HasTTFT || e.CompletionTokens != 0 {
		t.Fatalf("error %+v", e)
	}
	if e := c.reqs[3]; !e.Failed || e.E2E != 3 {
		t.Fatalf("timeout %+v", e)
	}
}

func TestExporterSendsAndDrops(t *testing.T) {
	c := &capture{}
	recv := otlp.New(otlp.Options{Sink: c})
	daemon := httptest.NewServer(recv)
	defer daemon.Close()
	m := NewMetrics()
	e := NewExporter(ExporterOptions{Endpoint: daemon.URL + "/v1/traces", BatchSize: 7, BatchTimeout: 20 * time.Millisecond}, m)
	ctx, cancel := context.WithCancel(context.Background())
	go e.Run(ctx)
	t0 := time.Now()
	for i := range 100 {
		e.Enqueue(&Record{Arrival: t0, End: t0.Add(time.Second), Tokens: int64(i), PromptTokens: -1, Model: "m", Outcome: OutcomeOK})
	}
	cancel()
	<-e.Done()
	if len(c.reqs) != 100 || testutil.ToFloat64(m.spansSent) != 100 {
		t.Fatalf("daemon folded %d, sent %v", len(c.reqs), testutil.ToFloat64(m.spansSent))
	}
	seen := map[float64]bool{}
	for _, r := range c.reqs {
		seen[r.CompletionTokens] = true
	}
	if len(seen) != 100 || recv.Spans(otlp.ResultDuplicate) != 0 {
		t.Fatal("spans lost or taken for copies")
	}
}

// A batch under way when Run is cancelled is still sent: the daemon
// answers each export after 50 ms, so the first full batch is in flight
// when the proxy shuts down; cancelling its request would drop 7 spans
// that were already taken off the queue.
func TestExportUnderWayAtShutdownIsSent(t *testing.T) {
	c := &capture{}
	recv := otlp.New(otlp.Options{Sink: c})
	started := make(chan struct{}, 100)
	daemon := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		time.Sleep(50 * time.Millisecond)
		recv.ServeHTTP(w, r)
	}))
	defer daemon.Close()
	m := NewMetrics()
	e := NewExporter(ExporterOptions{Endpoint: daemon.URL + "/v1/traces", BatchSize: 7, BatchTimeout: time.Hour}, m)
	ctx, cancel := context.WithCancel(context.Background())
	go e.Run(ctx)
	t0 := time.Now()
	for i := range 100 {
		e.Enqueue(&Record{Arrival: t0, End: t0.Add(time.Second), Tokens: int64(i), PromptTokens: -1, Model: "m", Outcome: OutcomeOK})
	}
	<-started // the first batch is at the daemon
	cancel()
	<-e.Done()
	if len(c.reqs) != 100 || testutil.ToFloat64(m.spansSent) != 100 {
		t.Fatalf("daemon folded %d, sent %v, dropped %v; want 100 sent", len(c.reqs), testutil.ToFloat64(m.spansSent), testutil.ToFloat64(m.spansDropped.WithLabelValues(DropExport)))
	}
}

// The daemon down: every request is still served at once, and every span
// is dropped and counted, by the queue or by the failed export.
func TestOTLPEndpointDown(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	var m *Metrics
	var exp *Exporter
	h := newHarness(t, func(o *Options) {})
	m = h.p.Metrics
	exp = NewExporter(ExporterOptions{Endpoint: "http://" + addr + "/v1/traces", QueueSize: 8, BatchSize: 4, BatchTimeout: 10 * time.Millisecond}, m)
	inner := h.p.opts.Sink
	h.p.SetSink(func(r *Record) { exp.Enqueue(r); inner(r) })
	ctx, cancel := context.WithCancel(context.Background())
	go exp.Run(ctx)
	const n = 50
	for i := range n {
		code, _ := readAll(t, h.front.URL, "/v1/chat/completions", chatStream, map[string]string{"X-Fake-Tokens": fmt.Sprint(i%5 + 1)})
		if code != http.StatusOK {
			t.Fatalf("request %d: %d", i, code)
		}
	}
	h.wait(t, n)
	cancel()
	<-exp.Done()
	dropped := testutil.ToFloat64(m.spansDropped.WithLabelValues(DropQueueFull)) + testutil.ToFloat64(m.spansDropped.WithLabelValues(DropExport))
	if dropped != n || testutil.ToFloat64(m.spansSent) != 0 {
		t.Fatalf("dropped %v sent %v, want %d and 0", dropped, testutil.ToFloat64(m.spansSent), n)
	}
}

func TestThousandConcurrentStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 streams")
	}
	h := newHarness(t, nil)
	const n = 1000
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, h.front.URL+"/v1/chat/completions", stringsReader(chatStream))
			req.Header.Set("X-Fake-Tokens", fmt.Sprint(i%7+2))
			req.Header.Set("X-Fake-ITL", "20ms")
			resp, err := client.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			buf := make([]byte, 4096)
			for {
				if _, err := resp.Body.Read(buf); err != nil {
					break
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	recs := h.wait(t, n)
	want, got := 0, 0
	for i := range n {
		want += i%7 + 2
	}
	for _, r := range recs {
		if r.Outcome != OutcomeOK || r.Estimated {
			t.Fatalf("record %+v", r)
		}
		got += int(r.Tokens)
	}
	if got != want || testutil.ToFloat64(h.p.Metrics.active) != 0 {
		t.Fatalf("tokens %d, want %d; active %v", got, want, testutil.ToFloat64(h.p.Metrics.active))
	}
}
