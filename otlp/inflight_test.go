package otlp

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// heldSink holds every Fold until released, as a slow target would.
type heldSink struct {
	release chan struct{}
	folded  atomic.Int64
}

func (s *heldSink) Match(*Resource) (Dest, string) { return s, "" }

func (s *heldSink) Fold(reqs []goodput.TracedRequest, _ func(string)) {
	<-s.release
	s.folded.Add(int64(len(reqs)))
}

// padding is shared by the big exports, so that many of them in one test
// cost one string.
var padding = strings.Repeat("p", 5<<20)

// bigTraces is an export of one request span, ids of its own, padded to
// size bytes when encoded.
func bigTraces(size int) ptraceotlp.ExportRequest {
	span := good("m")
	span["padding"] = ""
	base, _ := ptraceotlp.NewExportRequestFromTraces(traces("vllm", span)).MarshalProto()
	pad := size - len(base)
	for {
		span["padding"] = padding[:pad]
		req := ptraceotlp.NewExportRequestFromTraces(traces("vllm", span))
		got, _ := req.MarshalProto()
		if len(got) == size || pad <= 0 {
			return req
		}
		pad -= len(got) - size // the length prefixes around it grow too
	}
}

// bigExport is bigTraces encoded.
func bigExport(t *testing.T, size int) []byte {
	t.Helper()
	b, err := bigTraces(size).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// slowBody sends all of body but its last byte at once, then holds the
// last byte until released (or closed by the client's transport).
type slowBody struct {
	body    []byte // shared by the senders
	span    [8]byte
	spanAt  int // where body holds the span id, replaced by span as sent
	off     int
	release <-chan struct{}
	closed  chan struct{}
	once    sync.Once
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.off == len(b.body)-1 {
		select {
		case <-b.release:
		case <-b.closed:
			return 0, io.ErrClosedPipe
		}
	}
	if b.off == len(b.body) {
		return 0, io.EOF
	}
	end := len(b.body) - 1
	if b.off == end {
		end++
	}
	n := copy(p, b.body[b.off:end])
	for i := max(b.off, b.spanAt); i < min(b.off+n, b.spanAt+8); i++ {
		p[i-b.off] = b.span[i-b.spanAt]
	}
	b.off += n
	return n, nil
}

func (b *slowBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	return nil
}

func rssBytes() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			var kb int64
			for _, c := range strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")) {
				kb = 10*kb + int64(c-'0')
			}
			return kb << 10
		}
	}
	return -1
}

// 100 senders each hold a 4,000,000-byte export open on loopback, its
// last byte unsent. The receiver admits a request at its declared length
// plus one byte, against the default 16 MiB in flight: 4 fit
// (4 × 4,000,001 ≤ 16,777,216 < 5 × 4,000,001); the other 96 are answered
// 429 with Retry-After at once, before their bodies are read. The live
// heap while they are held is the 4 bodies' buffers, not 100; once
// released, the 4 are folded and the in-flight counts return to zero.
// Without the caps every body was read and held: 100 × 4 MB and more.
func TestConcurrentSlowBodiesAreCapped(t *testing.T) {
	const size, senders = 4_000_000, 100
	sink := &heldSink{release: make(chan struct{})}
	close(sink.release) // only the bodies are held here
	r := New(Options{Sink: sink})
	srv := httptest.NewServer(r)
	defer srv.Close()
	body := bigExport(t, size)
	if len(body) != size {
		t.Fatalf("export of %d bytes", len(body))
	}
	// Each sender sends a span of its own (a copy would be folded once):
	// the body's span id replaced as it is sent.
	sid := make([]byte, 8)
	binary.BigEndian.PutUint64(sid, lastID.Load())
	spanAt := bytes.Index(body, sid)
	base, baseRSS := heapAfterGC(), rssBytes()

	release := make(chan struct{})
	var wg sync.WaitGroup
	codes := make(chan int, senders)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: senders}}
	for i := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := &slowBody{body: body, spanAt: spanAt, release: release, closed: make(chan struct{})}
			binary.BigEndian.PutUint64(b.span[:], 1<<40+uint64(i))
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/traces", b)
			req.ContentLength = int64(len(body))
			req.Header.Set("Content-Type", ctProto)
			resp, err := client.Do(req)
			if err != nil {
				// The server answers 429 without reading the body and
				// closes the connection; a client still writing may see
				// the closed connection before the answer.
				if ctx.Err() == nil && (strings.Contains(err.Error(), "broken pipe") || strings.Contains(err.Error(), "connection reset")) {
					codes <- http.StatusTooManyRequests
					return
				}
				t.Errorf("sender: %v", err)
				codes <- -1
				return
			}
			if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "1" {
				t.Errorf("429 without Retry-After: %q", resp.Header.Get("Retry-After"))
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	// Wait for the 96 refusals (429, or the connection closed after it),
	// and for the 4 admitted to be held.
	refused := 0
	for refused < senders-4 {
		select {
		case c := <-codes:
			if c != http.StatusTooManyRequests {
				t.Fatalf("a sender got %d before any body was complete, want 429", c)
			}
			refused++
		case <-ctx.Done():
			t.Fatalf("%d refused before the deadline", refused)
		}
	}
	if reqs, bytes := r.Inflight(); reqs != 4 || bytes != 4*(size+1) {
		t.Errorf("in flight: %d requests, %d bytes; want 4 and 4 × (body + 1)", reqs, bytes)
	}
	held, heldRSS := heapAfterGC(), rssBytes()
	// The 4 admitted buffers (16 MB), the client's one body (4 MB) and
	// slack for the HTTP machinery: under 24 MiB above the start.
	if grown := int64(held) - int64(base); grown > 24<<20 {
		t.Errorf("live heap grew by %d bytes with 100 bodies held", grown)
	}
	t.Logf("100 senders of %d bytes held: live heap %+d bytes, RSS %+d bytes (%d MiB total)", len(body), int64(held)-int64(base), heldRSS-baseRSS, heldRSS>>20)
	close(release)
	wg.Wait()
	close(codes)
	ok := 0
	for c := range codes {
		if c == http.StatusOK {
			ok++
		}
	}
	if ok != 4 || sink.folded.Load() != 4 || r.Rejected(TransportHTTP, RejectInflight) != senders-4 {
		t.Errorf("after release: %d answered 200, %d folded, %d refused; want 4, 4, 96", ok, sink.folded.Load(), r.Rejected(TransportHTTP, RejectInflight))
	}
	if reqs, bytes := r.Inflight(); reqs != 0 || bytes != 0 {
		t.Errorf("in flight after all answered: %d requests, %d bytes", reqs, bytes)
	}
}

// A body of unknown length (chunked, or gzip) is charged as it is read:
// one that grows past what is left of the in-flight bytes is refused with
// 429 mid-read, and its charge given back.
func TestChunkedBodyChargedAsRead(t *testing.T) {
	r := New(Options{Sink: &sink{}, MaxInflightBytes: 1 << 20})
	srv := httptest.NewServer(r)
	defer srv.Close()
	body := bigExport(t, 3<<20)
	req, _ := http.NewRequest(http.MethodPost, srv.URL, io.MultiReader(strings.NewReader(string(body)))) // no length: chunked
	req.Header.Set("Content-Type", ctProto)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a 3 MiB chunked body against 1 MiB in flight: %d, want 429", resp.StatusCode)
	}
	if reqs, bytes := r.Inflight(); reqs != 0 || bytes != 0 {
		t.Errorf("in flight after the refusal: %d requests, %d bytes", reqs, bytes)
	}
	small := bigExport(t, 100<<10)
	req, _ = http.NewRequest(http.MethodPost, srv.URL, io.MultiReader(strings.NewReader(string(small))))
	req.Header.Set("Content-Type", ctProto)
	if resp, body := doBody(t, req); resp.StatusCode != http.StatusOK {
		t.Errorf("a 100 KiB chunked body: %d %s", resp.StatusCode, body)
	}
}

func doBody(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// 64 gRPC senders of 4,000,000-byte exports at once, over 64
// connections (a connection carries one stream at a time), against a target
// that holds each Fold: a stream takes a request slot at its headers and
// its message's bytes once read, so 4 are admitted (4 × 4,000,000 bytes
// within the default 16 MiB) and 60 are refused with RESOURCE_EXHAUSTED
// and a RetryInfo, at their headers (past 8 slots) or once their message
// is read. After the 4 are released every charge is given back, also for
// streams that ended in an error.
func TestConcurrentGRPCExportsAreCapped(t *testing.T) {
	const senders, conns = 64, 64
	sink := &heldSink{release: make(chan struct{})}
	r := New(Options{Sink: sink})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(r.GRPCServerOptions()...)
	r.RegisterGRPC(gs)
	go gs.Serve(l)
	defer gs.Stop()
	var clients []ptraceotlp.GRPCClient
	for range conns {
		cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		clients = append(clients, ptraceotlp.NewGRPCClient(cc))
	}
	client := clients[0]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errs := make(chan error, senders)
	for i := range senders {
		req := bigTraces(4_000_000) // spans of its own, the padding shared
		go func() {
			_, err := clients[i%conns].Export(ctx, req)
			errs <- err
		}()
	}
	exhausted := 0
	for exhausted < senders-4 {
		select {
		case err := <-errs:
			st := status.Convert(err)
			if st.Code() != codes.ResourceExhausted {
				t.Fatalf("a sender got %v before any was released, want ResourceExhausted", err)
			}
			retry := false
			for _, d := range st.Details() {
				if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().AsDuration() == time.Second {
					retry = true
				}
			}
			if !retry {
				t.Errorf("ResourceExhausted without a RetryInfo: the OTLP exporter would not retry it")
			}
			exhausted++
		case <-ctx.Done():
			t.Fatalf("%d refused before the deadline", exhausted)
		}
	}
	if reqs, bytes := r.Inflight(); reqs != 4 || bytes != 4*4_000_000 {
		t.Errorf("in flight: %d requests, %d bytes; want 4 and 4 × 4,000,000", reqs, bytes)
	}
	close(sink.release)
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("an admitted export: %v", err)
		}
	}
	if sink.folded.Load() != 4 || r.Rejected(TransportGRPC, RejectInflight) != senders-4 {
		t.Errorf("%d folded, %d refused; want 4 and 60", sink.folded.Load(), r.Rejected(TransportGRPC, RejectInflight))
	}
	// A message over the size cap and a call the client gives up on end
	// their streams in an error: their charges come back too.
	if _, err := client.Export(ctx, bigTraces(5<<20-1000)); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("oversized: %v", err)
	}
	short, stop := context.WithTimeout(ctx, time.Millisecond)
	client.Export(short, bigTraces(4_000_000))
	stop()
	deadline := time.Now().Add(10 * time.Second)
	for {
		reqs, bytes := r.Inflight()
		if reqs == 0 && bytes == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("charges not given back: %d requests, %d bytes", reqs, bytes)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
