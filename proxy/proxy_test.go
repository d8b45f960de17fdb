package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

type harness struct {
	engine  *fakeEngine
	up      *httptest.Server
	front   *httptest.Server
	p       *Proxy
	mu      sync.Mutex
	records []Record
	got     chan struct{}
}

func newHarness(t *testing.T, tweak func(*Options)) *harness {
	t.Helper()
	h := &harness{engine: &fakeEngine{}, got: make(chan struct{}, 4096)}
	h.up = httptest.NewServer(h.engine)
	t.Cleanup(h.up.Close)
	u, _ := url.Parse(h.up.URL)
	o := Options{Upstream: u, InjectUsage: true, Sink: func(r *Record) {
		h.mu.Lock()
		h.records = append(h.records, *r)
		h.mu.Unlock()
		h.got <- struct{}{}
	}}
	if tweak != nil {
		tweak(&o)
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	h.front = httptest.NewServer(p)
	t.Cleanup(h.front.Close)
	return h
}

// wait returns the next n records.
func (h *harness) wait(t *testing.T, n int) []Record {
	t.Helper()
	for range n {
		select {
		case <-h.got:
		case <-time.After(10 * time.Second):
			t.Fatalf("waited for %d records", n)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.records
	h.records = nil
	return out
}

func post(t *testing.T, ctx context.Context, base, path, body string, hdr map[string]string) (*http.Response, error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return http.DefaultClient.Do(req)
}

func readAll(t *testing.T, base, path, body string, hdr map[string]string) (int, string) {
	t.Helper()
	resp, err := post(t, context.Background(), base, path, body, hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const chatStream = `{"model":"m1","stream":true,"messages":[{"role":"user","content":"hi"}]}`

// The client that did not ask for usage receives exactly what the engine
// sends it directly; the proxy still learns the exact tokens.
func TestStreamUnchangedAndUsageExact(t *testing.T) {
	h := newHarness(t, nil)
	hdr := map[string]string{"X-Fake-Tokens": "5", "X-Fake-TTFT": "30ms", "X-Fake-ITL": "5ms"}
	_, direct := readAll(t, h.up.URL, "/v1/chat/completions", chatStream, hdr)
	code, via := readAll(t, h.front.URL, "/v1/chat/completions", chatStream, hdr)
	if code != 200 || via != direct {
		t.Fatalf("through the proxy (%d):\n%s\ndirect:\n%s", code, via, direct)
	}
	if strings.Contains(via, "usage") {
		t.Fatal("the usage chunk the proxy asked for reached the client")
	}
	if sent := *h.engine.lastBody.Load(); !bytes.Contains(sent, []byte(`"include_usage":true`)) {
		t.Fatalf("upstream got %s", sent)
	}
	r := h.wait(t, 1)[0]
	if r.Outcome != OutcomeOK || r.Tokens != 5 || r.Estimated || r.Model != "m1" || !r.HasTTFT || r.PromptTokens != 7 {
		t.Fatalf("record %+v", r)
	}
	if r.TTFT < 30*time.Millisecond || r.E2E() < 50*time.Millisecond || r.TTFT > r.E2E() {
		t.Fatalf("ttft %v e2e %v: the engine waited 30ms, then 4×5ms", r.TTFT, r.E2E())
	}
	if len(r.FinishReasons) != 1 || r.FinishReasons[0] != "length" {
		t.Fatalf("finish reasons %v", r.FinishReasons)
	}

	// A client that asked for usage gets the chunk, and the body is sent
	// upstream byte for byte.
	asked := `{"model":"m1","stream":true,"stream_options":{"include_usage":true},"messages":[]}`
	_, direct = readAll(t, h.up.URL, "/v1/chat/completions", asked, hdr)
	_, via = readAll(t, h.front.URL, "/v1/chat/completions", asked, hdr)
	if via != direct || !strings.Contains(via, `"usage"`) {
		t.Fatalf("asked for usage: through the proxy\n%s\ndirect\n%s", via, direct)
	}
	if sent := string(*h.engine.lastBody.Load()); sent != asked {
		t.Fatalf("body changed: %s", sent)
	}
	h.wait(t, 1)
}

func TestRequestInjection(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"stream":true,"model":"m"}`, `{"stream_options":{"include_usage":true},"stream":true,"model":"m"}`},
		{`{"stream":true,"stream_options":null}`, `{"stream":true,"stream_options":{"include_usage":true}}`},
		{`{"stream":true,"stream_options":{"continuous_usage_stats":false}}`, `{"stream":true,"stream_options":{"continuous_usage_stats":false,"include_usage":true}}`},
		{`{"stream":true,"stream_options":{"include_usage":false}}`, `{"stream":true,"stream_options":{"include_usage":true}}`},
		{`{"stream":true,"stream_options":{"include_usage":true}}`, `{"stream":true,"stream_options":{"include_usage":true}}`},
		{`{"stream":false}`, `{"stream":false}`},
		{`not json`, `not json`},
	} {
		s := &stream{}
		if got := string(s.readRequest([]byte(c.in), true)); got != c.want {
			t.Errorf("%s: sent %s, want %s", c.in, got, c.want)
		}
		if s.strip != (c.in != c.want) {
			t.Errorf("%s: strip %v", c.in, s.strip)
		}
	}
}

func TestNonStreamingAndN(t *testing.T) {
	h := newHarness(t, nil)
	hdr := map[string]string{"X-Fake-Tokens": "4", "X-Fake-TTFT": "20ms", "X-Fake-ITL": "5ms"}
	body := `{"model":"m2","n":3,"prompt":"x"}`
	_, direct := readAll(t, h.up.URL, "/v1/completions", body, hdr)
	_, via := readAll(t, h.front.URL, "/v1/completions", body, hdr)
	if via != direct {
		t.Fatalf("non-streaming body changed:\n%s\n%s", via, direct)
	}
	r := h.wait(t, 1)[0]
	if r.Outcome != OutcomeOK || r.Tokens != 12 || r.Estimated || r.N != 3 || r.Stream {
		t.Fatalf("record %+v", r)
	}
	// The answer's first byte is the client's first token.
	if r.TTFT < 35*time.Millisecond {
		t.Fatalf("ttft %v: the whole answer took 35ms", r.TTFT)
	}

	// n > 1 streamed: usage covers every choice.
	readAll(t, h.front.URL, "/v1/completions", `{"model":"m2","n":2,"stream":true,"prompt":"x"}`, hdr)
	r = h.wait(t, 1)[0]
	if r.Tokens != 8 || r.Estimated || r.N != 2 {
		t.Fatalf("n=2 stream: %+v", r)
	}
}

// With no usage the tokens are the content-bearing chunks, flagged.
func TestNoUsageIsEstimated(t *testing.T) {
	h := newHarness(t, nil)
	hdr := map[string]string{"X-Fake-Tokens": "6", "X-Fake-Fault": "no_usage"}
	readAll(t, h.front.URL, "/v1/chat/completions", `{"model":"m","n":2,"stream":true}`, hdr)
	r := h.wait(t, 1)[0]
	if r.Outcome != OutcomeOK || r.Tokens != 12 || !r.Estimated {
		t.Fatalf("record %+v", r)
	}
	if got := testutil.ToFloat64(h.p.Metrics.estimated); got != 1 {
		t.Fatalf("estimated counter %v", got)
	}
	// Without injection, the same.
	h2 := newHarness(t, func(o *Options) { o.InjectUsage = false })
	readAll(t, h2.front.URL, "/v1/chat/completions", chatStream, map[string]string{"X-Fake-Tokens": "3"})
	if r := h2.wait(t, 1)[0]; r.Tokens != 3 || !r.Estimated {
		t.Fatalf("no injection: %+v", r)
	}
}

func TestClientAbortCancelsUpstream(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := post(t, ctx, h.front.URL, "/v1/chat/completions", chatStream, map[string]string{"X-Fake-Tokens": "1000", "X-Fake-ITL": "10ms"})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	io.ReadFull(resp.Body, buf) // the stream has started
	time.Sleep(30 * time.Millisecond)
	cancel()
	resp.Body.Close()
	r := h.wait(t, 1)[0]
	if r.Outcome != OutcomeClientAbort || !r.Estimated || r.Tokens < 1 || r.Tokens > 100 {
		t.Fatalf("record %+v", r)
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.engine.cancelled.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if h.engine.cancelled.Load() != 1 {
		t.Fatal("the upstream request was not cancelled")
	}
}

func TestUpstreamFaults(t *testing.T) {
	for _, c := range []struct {
		fault, outcome, reason string
		code                   int
	}{
		{"status500", OutcomeUpstreamError, ReasonStatus, 500},
		{"die", OutcomeUpstreamError, ReasonReset, 200},
		{"malformed", OutcomeUpstreamError, ReasonMalformed, 200},
		{"error_event", OutcomeUpstreamError, ReasonErrorEvent, 200},
		{"hang", OutcomeTimeout, "", 504},
	} {
		t.Run(c.fault, func(t *testing.T) {
			h := newHarness(t, func(o *Options) { o.HeaderTimeout = 100 * time.Millisecond })
			hdr := map[string]string{"X-Fake-Tokens": "6", "X-Fake-Fault": c.fault}
			resp, err := post(t, context.Background(), h.front.URL, "/v1/chat/completions", chatStream, hdr)
			if err != nil {
				t.Fatal(err)
			}
			via, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.code {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.code)
			}
			r := h.wait(t, 1)[0]
			if r.Outcome != c.outcome || r.Reason != c.reason {
				t.Fatalf("record %+v", r)
			}
			if c.fault == "malformed" || c.fault == "error_event" {
				_, direct := readAll(t, h.up.URL, "/v1/chat/completions", chatStream, hdr)
				if string(via) != direct {
					t.Fatalf("a bad stream is still forwarded unchanged:\n%s\n%s", via, direct)
				}
				h.wait(t, 0)
			}
		})
	}
	t.Run("timeout mid-stream", func(t *testing.T) {
		h := newHarness(t, func(o *Options) { o.Timeout = 100 * time.Millisecond })
		readAll(t, h.front.URL, "/v1/chat/completions", chatStream, map[string]string{"X-Fake-Tokens": "100", "X-Fake-ITL": "10ms"})
		if r := h.wait(t, 1)[0]; r.Outcome != OutcomeTimeout || !r.HasTTFT {
			t.Fatalf("record %+v", r)
		}
	})
	t.Run("refused", func(t *testing.T) {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := l.Addr().String()
		l.Close()
		h := newHarness(t, func(o *Options) { o.Upstream, _ = url.Parse("http://" + addr) })
		code, _ := readAll(t, h.front.URL, "/v1/chat/completions", chatStream, nil)
		if r := h.wait(t, 1)[0]; code != 502 || r.Outcome != OutcomeUpstreamError || r.Reason != ReasonRefused {
			t.Fatalf("%d %+v", code, r)
		}
	})
}

// zeros is an endless reader of a fixed length that holds nothing.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), z.n)
	clear(p[:k])
	z.n -= k
	return int(k), nil
}

func TestLargeBodies(t *testing.T) {
	h := newHarness(t, nil)
	const size = 100 << 20
	// A measured request over the limit is refused with 413 and no span.
	req, _ := http.NewRequest(http.MethodPost, h.front.URL+"/v1/chat/completions", &zeros{size})
	req.ContentLength = size
	resp, err := http.DefaultClient.Do(req)
	if err != nil && !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "broken pipe") {
		t.Fatal(err)
	}
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	if got := testutil.ToFloat64(h.p.Metrics.requests.WithLabelValues(OutcomeRejected)); got != 1 {
		t.Fatalf("rejected %v", got)
	}
	// Anything else streams through, unread.
	req, _ = http.NewRequest(http.MethodPost, h.front.URL+"/v1/files", &zeros{size})
	req.ContentLength = size
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "passthrough /v1/files 104857600" {
		t.Fatalf("got %q", b)
	}
}

func TestPassThrough(t *testing.T) {
	h := newHarness(t, nil)
	resp, err := http.Get(h.front.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "passthrough /metrics 0" {
		t.Fatalf("got %q", b)
	}
	if testutil.ToFloat64(h.p.Metrics.passthrough) != 1 {
		t.Fatal("passthrough not counted")
	}
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// The proxy's series pass Prometheus' lint (names, units, HELP).
func TestMetricsLint(t *testing.T) {
	problems, err := testutil.CollectAndLint(NewMetrics())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// A client that accepts gzip still gets an answer the proxy could read:
// the transport negotiates compression with the engine and hands the body
// on decompressed, which is a valid answer to any Accept-Encoding.
func TestCompressedAnswerIsRead(t *testing.T) {
	h := newHarness(t, nil)
	req, _ := http.NewRequest(http.MethodPost, h.front.URL+"/v1/completions", strings.NewReader(`{"model":"m","prompt":"x"}`))
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("X-Fake-Tokens", "9")
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "" || !strings.Contains(string(b), `"completion_tokens":9`) {
		t.Fatalf("%s %q", resp.Header.Get("Content-Encoding"), b)
	}
	if r := h.wait(t, 1)[0]; r.Outcome != OutcomeOK || r.Tokens != 9 || r.Estimated {
		t.Fatalf("record %+v", r)
	}
}
