package otlp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The filter's two generations, worked by hand: with room for 4 spans
// (2 a generation) and a 10 s window, a copy is recognised while its
// first is in either generation, and forgotten once two rotations passed.
func TestDedupWindowAndCapacity(t *testing.T) {
	clock := time.Unix(1000, 0)
	d := newDedup(10*time.Second, 4)
	d.now = func() time.Time { return clock }
	span := func(n uint64) (pcommon.TraceID, pcommon.SpanID) {
		var tid pcommon.TraceID
		var sid pcommon.SpanID
		tid[15], sid[7] = byte(n), byte(n)
		return tid, sid
	}
	seen := func(n uint64) bool { return d.seen(span(n)) }
	for _, step := range []struct {
		advance time.Duration
		span    uint64
		want    bool
	}{
		{0, 1, false}, // cur {1}
		{0, 1, true},
		{0, 2, false}, // cur {1 2}
		{0, 3, false}, // cur full: old {1 2}, cur {3}
		{0, 1, true},  // still in old
		{0, 4, false}, // cur {3 4}
		{0, 5, false}, // old {3 4}, cur {5}: 1 and 2 forgotten
		{0, 1, false}, // new again: cur {5 1}
		{0, 3, true},
		{10 * time.Second, 6, false}, // cur 10 s old: old {5 1}, cur {6}
		{9 * time.Second, 5, true},   // 19 s after it was first read
		{time.Second, 7, false},      // 10 s: old {6}, cur {7}; 5 and 1 forgotten
		{0, 5, false},
		{0, 6, true},
	} {
		clock = clock.Add(step.advance)
		if got := seen(step.span); got != step.want {
			t.Fatalf("span %d at %v: seen %v, want %v", step.span, clock.Unix()-1000, got, step.want)
		}
		if n := d.size(); n > 4 {
			t.Fatalf("%d spans remembered, the bound is 4", n)
		}
	}
}

// receivers starts the receiver on HTTP and gRPC on loopback and returns a
// function for each that sends one export.
func receivers(t *testing.T, r *Receiver) map[string]func(ptrace.Traces) ptraceotlp.ExportResponse {
	t.Helper()
	hs := httptest.NewServer(r)
	t.Cleanup(hs.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(r.GRPCServerOptions()...)
	r.RegisterGRPC(gs)
	go gs.Serve(l)
	t.Cleanup(gs.Stop)
	cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	client := ptraceotlp.NewGRPCClient(cc)
	return map[string]func(ptrace.Traces) ptraceotlp.ExportResponse{
		TransportHTTP: func(td ptrace.Traces) ptraceotlp.ExportResponse {
			body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
			if err != nil {
				t.Fatal(err)
			}
			resp, text := post(t, hs.URL+"/v1/traces", ctProto, "", body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("HTTP %d: %s", resp.StatusCode, text)
			}
			out := ptraceotlp.NewExportResponse()
			if err := out.UnmarshalProto([]byte(text)); err != nil {
				t.Fatal(err)
			}
			return out
		},
		TransportGRPC: func(td ptrace.Traces) ptraceotlp.ExportResponse {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, err := client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
			if err != nil {
				t.Fatal(err)
			}
			return resp
		},
	}
}

// copies returns an export of one resource holding n copies of span.
func copies(span ptrace.Span, n int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(ResService, "vllm")
	ss := rs.ScopeSpans().AppendEmpty()
	for range n {
		span.CopyTo(ss.Spans().AppendEmpty())
	}
	return td
}

// At-least-once delivery: the same export of 10 spans sent twice folds 10
// requests, and one span sent 5 times and then 100 times in one request
// folds one; every copy is counted as a duplicate and none is reported to
// the sender as rejected. Over both transports.
func TestDuplicatesCountOnce(t *testing.T) {
	for _, transport := range []string{TransportHTTP, TransportGRPC} {
		t.Run(transport, func(t *testing.T) {
			s := &sink{}
			r := New(Options{Sink: s})
			send := receivers(t, r)[transport]

			spans := make([]map[string]any, 10)
			for i := range spans {
				spans[i] = good("m")
			}
			td := traces("vllm", spans...)
			for range 2 {
				if resp := send(td); resp.PartialSuccess().RejectedSpans() != 0 {
					t.Errorf("copies reported as rejected: %q", resp.PartialSuccess().ErrorMessage())
				}
			}
			if len(s.reqs) != 10 || r.Spans(ResultFolded) != 10 || r.Spans(ResultDuplicate) != 10 {
				t.Errorf("export sent twice: folded %d (%d), duplicates %d; want 10 and 10", len(s.reqs), r.Spans(ResultFolded), r.Spans(ResultDuplicate))
			}

			one := traces("vllm", good("m")).ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
			for range 5 {
				send(copies(one, 1))
			}
			send(copies(one, 100))
			// 10 + 1 folded; 10 + 4 + 100 copies.
			if len(s.reqs) != 11 || r.Spans(ResultFolded) != 11 || r.Spans(ResultDuplicate) != 114 {
				t.Errorf("one span 5 times and 100 times at once: folded %d (%d), duplicates %d; want 11 and 114", len(s.reqs), r.Spans(ResultFolded), r.Spans(ResultDuplicate))
			}
		})
	}
}

// A span without the ids OTLP requires cannot be told from its copies: it
// is malformed, never folded.
func TestSpanWithoutIDsIsMalformed(t *testing.T) {
	td := traces("vllm", good("m"), good("m"))
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	spans.At(0).SetTraceID(pcommon.TraceID{})
	spans.At(1).SetSpanID(pcommon.SpanID{})
	s := &sink{}
	r := New(Options{Sink: s})
	out := r.Consume(netip.Addr{}, td)
	if out.Dropped != 2 || len(s.reqs) != 0 || r.Spans(ResultMalformed) != 2 {
		t.Errorf("spans without ids: %+v, folded %d", out, len(s.reqs))
	}
}

// Spans no engine can send are refused with their reason, and the sender
// is told, over HTTP and gRPC; a span at each bound is folded. 2^53 completion tokens (the
// largest count a double holds exactly) is refused at the ceiling.
func TestImplausibleSpans(t *testing.T) {
	with := func(kv ...any) map[string]any {
		m := good("m")
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	long := strings.Repeat("x", MaxModelNameBytes)
	for _, c := range []struct {
		name   string
		attrs  map[string]any
		reason string // "" when folded
	}{
		{"2^53 completion tokens", with(AttrCompletionTokens, int64(1)<<53), ReasonOverCeiling},
		{"2^53 as a double", with(AttrCompletionTokens, float64(1<<53)), ReasonOverCeiling},
		{"at the ceiling", with(AttrCompletionTokens, int64(DefaultMaxCompletionTokens)), ""},
		{"one over the ceiling", with(AttrCompletionTokens, int64(DefaultMaxCompletionTokens+1)), ReasonOverCeiling},
		{"over max_tokens", with(AttrMaxTokens, int64(10)), ReasonOverMaxTokens},
		{"at max_tokens", with(AttrMaxTokens, int64(11)), ""},
		{"n sequences of max_tokens", with(AttrMaxTokens, int64(4), AttrN, int64(3)), ""},                         // 11 ≤ 4 × 3
		{"beam search sequences", with(AttrMaxTokens, int64(4), AttrNumSequences, int64(2)), ReasonOverMaxTokens}, // 11 > 4 × 2
		{"e2e over a day", with(AttrE2E, 86400.5), ReasonLatency},
		{"e2e of a day", with(AttrE2E, 86400.0), ""},
		{"ttft over a day", with(AttrTTFT, 1e9), ReasonLatency},
		{"queue over a day", with(AttrQueue, 1e300), ReasonLatency},
		{"decode over a day", with(AttrDecode, 90000.0), ReasonLatency},
		{"model name of 256 bytes", with(AttrModel, long), ""},
		{"model name of 257 bytes", with(AttrModel, long+"y"), ReasonModelTooLong},
		{"model name of 256 KiB", with(AttrModel, strings.Repeat("m", 256<<10)), ReasonModelTooLong},
	} {
		for _, transport := range []string{TransportHTTP, TransportGRPC} {
			s := &sink{}
			r := New(Options{Sink: s})
			send := receivers(t, r)[transport]
			resp := send(traces("vllm", c.attrs))
			if c.reason == "" {
				if len(s.reqs) != 1 || resp.PartialSuccess().RejectedSpans() != 0 {
					t.Errorf("%s over %s: folded %d, rejected %d; want it folded", c.name, transport, len(s.reqs), resp.PartialSuccess().RejectedSpans())
				}
				continue
			}
			if len(s.reqs) != 0 || r.Implausible(c.reason) != 1 || r.Spans(ResultImplausible) != 1 {
				t.Errorf("%s over %s: folded %d, %s %d, implausible %d; want refused as %s", c.name, transport, len(s.reqs), c.reason, r.Implausible(c.reason), r.Spans(ResultImplausible), c.reason)
			}
			if ps := resp.PartialSuccess(); ps.RejectedSpans() != 1 || !strings.Contains(ps.ErrorMessage(), ResultImplausible) {
				t.Errorf("%s over %s: the sender was told %d rejected, %q", c.name, transport, ps.RejectedSpans(), ps.ErrorMessage())
			}
		}
	}
}

// Spans whose times no request can have: unset (0, 1970), before 2000,
// ending in year 2200 or more than a day ahead of the daemon's clock, and
// ending before they start, are refused with their reason on both
// transports; a sender's clock a few hours ahead, and a span of zero
// length, still fold.
func TestImpossibleSpanTimes(t *testing.T) {
	now := time.Now()
	at := func(t time.Time) pcommon.Timestamp { return pcommon.NewTimestampFromTime(t) }
	for _, c := range []struct {
		name       string
		start, end pcommon.Timestamp
		reason     string // "" when folded
	}{
		{"unset times", 0, 0, ReasonTimeBefore},
		{"unset start", 0, at(now), ReasonTimeBefore},
		{"1999", at(time.Date(1999, 12, 31, 23, 59, 0, 0, time.UTC)), at(time.Date(1999, 12, 31, 23, 59, 1, 0, time.UTC)), ReasonTimeBefore},
		{"2000", at(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)), at(time.Date(2000, 1, 1, 0, 0, 1, 0, time.UTC)), ""},
		{"year 2200", at(time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)), at(time.Date(2200, 1, 1, 0, 0, 1, 0, time.UTC)), ReasonTimeAhead},
		{"ends 25 h ahead", at(now), at(now.Add(25 * time.Hour)), ReasonTimeAhead},
		{"a clock 5 h ahead", at(now.Add(5 * time.Hour)), at(now.Add(5*time.Hour + time.Second)), ""},
		{"end before start", at(now.Add(-time.Second)), at(now.Add(-2 * time.Second)), ReasonEndBeforeStart},
		{"end at start", at(now.Add(-time.Second)), at(now.Add(-time.Second)), ""},
	} {
		for _, transport := range []string{TransportHTTP, TransportGRPC} {
			s := &sink{}
			r := New(Options{Sink: s})
			td := traces("vllm", good("m"))
			sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
			sp.SetStartTimestamp(c.start)
			sp.SetEndTimestamp(c.end)
			resp := receivers(t, r)[transport](td)
			if c.reason == "" {
				if len(s.reqs) != 1 || resp.PartialSuccess().RejectedSpans() != 0 {
					t.Errorf("%s over %s: folded %d, rejected %d; want it folded", c.name, transport, len(s.reqs), resp.PartialSuccess().RejectedSpans())
				}
				continue
			}
			if len(s.reqs) != 0 || r.Implausible(c.reason) != 1 || r.Spans(ResultImplausible) != 1 {
				t.Errorf("%s over %s: folded %d, %s %d, implausible %d; want refused as %s", c.name, transport, len(s.reqs), c.reason, r.Implausible(c.reason), r.Spans(ResultImplausible), c.reason)
			}
			if ps := resp.PartialSuccess(); ps.RejectedSpans() != 1 || !strings.Contains(ps.ErrorMessage(), ResultImplausible) {
				t.Errorf("%s over %s: the sender was told %d rejected, %q", c.name, transport, ps.RejectedSpans(), ps.ErrorMessage())
			}
		}
	}
}
