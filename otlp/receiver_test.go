package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	spb "google.golang.org/genproto/googleapis/rpc/status"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// sink sends every resource whose service name is "vllm" to one place.
type sink struct {
	mu   sync.Mutex
	reqs []goodput.TracedRequest
}

func (s *sink) Match(res *Resource) (Dest, string) {
	if res.ServiceName != "vllm" {
		return nil, ResultUnmatched
	}
	return s, ""
}

func (s *sink) Fold(reqs []goodput.TracedRequest, drop func(string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range reqs {
		if r.Model == "" {
			drop(ResultNoModel)
			continue
		}
		s.reqs = append(s.reqs, r)
	}
}

// lastID numbers the spans the tests build: each gets ids of its own.
var lastID atomic.Uint64

// ids returns a fresh trace id and span id: the span number in the span
// id and in the trace id's last eight bytes, its first byte 0xab.
func ids() (pcommon.TraceID, pcommon.SpanID) {
	n := lastID.Add(1)
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	tid[0] = 0xab
	binary.BigEndian.PutUint64(tid[8:], n)
	binary.BigEndian.PutUint64(sid[:], n)
	return tid, sid
}

// traces builds an export of one resource with the given span attributes,
// each span with ids of its own.
func traces(service string, spans ...map[string]any) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(ResService, service)
	ss := rs.ScopeSpans().AppendEmpty()
	for _, attrs := range spans {
		sp := ss.Spans().AppendEmpty()
		sp.SetName(SpanName)
		tid, sid := ids()
		sp.SetTraceID(tid)
		sp.SetSpanID(sid)
		setTimes(sp)
		if err := sp.Attributes().FromRaw(attrs); err != nil {
			panic(err)
		}
	}
	return td
}

// setTimes gives a span the times of a request that ended just now, as
// an engine's exporter does (the receiver refuses unset ones).
func setTimes(sp ptrace.Span) {
	end := time.Now().Add(-time.Second)
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(end.Add(-1500 * time.Millisecond)))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
}

func good(model string) map[string]any {
	return map[string]any{AttrModel: model, AttrE2E: 1.5, AttrTTFT: 0.25, AttrQueue: 0.125, AttrCompletionTokens: int64(11)}
}

// Every way a span can be unusable is counted under its reason and never
// folded with a made-up value.
func TestRequestDecoding(t *testing.T) {
	with := func(k string, v any) map[string]any {
		m := good("m")
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, c := range []struct {
		name   string
		attrs  map[string]any
		result string
	}{
		{"complete", good("m"), ResultFolded},
		{"no e2e: another span", with(AttrE2E, nil), ResultNotRequest},
		{"negative e2e", with(AttrE2E, -1.0), ResultMalformed},
		{"infinite e2e", with(AttrE2E, math.Inf(1)), ResultMalformed},
		{"NaN ttft", with(AttrTTFT, math.NaN()), ResultMalformed},
		{"e2e as a string", with(AttrE2E, "1.5"), ResultMalformed},
		{"no tokens", with(AttrCompletionTokens, nil), ResultMalformed},
		{"fractional tokens", with(AttrCompletionTokens, 2.5), ResultMalformed},
		{"negative tokens", with(AttrCompletionTokens, int64(-3)), ResultMalformed},
		{"tokens as a float", with(AttrCompletionTokens, 11.0), ResultFolded},
		{"model not a string", with(AttrModel, int64(3)), ResultMalformed},
		{"finish reasons not JSON", with(AttrFinishReasons, "[stop"), ResultMalformed},
		{"finish reasons as a number", with(AttrFinishReasons, int64(1)), ResultMalformed},
		{"no queue: folded, judged where it can be", with(AttrQueue, nil), ResultFolded},
		{"estimated tokens", with(AttrUsageEstimated, true), ResultFolded},
		{"estimated tokens not a bool", with(AttrUsageEstimated, "true"), ResultMalformed},
	} {
		td := traces("vllm", c.attrs)
		_, got := Request(td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0))
		if got != c.result {
			t.Errorf("%s: %s, want %s", c.name, got, c.result)
		}
	}
	td := traces("vllm", with(AttrFinishReasons, `["abort"]`), with(AttrFinishReasons, []any{"error"}), with(AttrDecode, 1.0))
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	spans.At(2).Status().SetCode(ptrace.StatusCodeError)
	r0, _ := Request(spans.At(0))
	r1, _ := Request(spans.At(1))
	r2, _ := Request(spans.At(2))
	if !r0.Aborted || r0.Failed || !r1.Failed || !r2.Failed || !r2.HasDecode || r2.Decode != 1 || r0.E2E != 1.5 || r0.TTFT != 0.25 || r0.Queue != 0.125 || r0.CompletionTokens != 11 {
		t.Errorf("decoded: %+v %+v %+v", r0, r1, r2)
	}
}

func TestSampled(t *testing.T) {
	for ts, want := range map[string]bool{
		"":                       false,
		"ot=th:0":                false, // threshold 0 keeps every span
		"ot=th:8":                true,  // probability 1/2
		"ot=rv:abc;th:c":         true,
		"vendor=x,ot=th:fff":     true,
		"ot=p:0":                 false,
		"ot=p:2":                 true, // probability 1/4
		"ot=th:zz":               false,
		"ot=th:123456789abcdef0": false, // too long: not a threshold
		"other=th:8":             false,
	} {
		if got := Sampled(ts); got != want {
			t.Errorf("Sampled(%q) = %v, want %v", ts, got, want)
		}
	}
}

func post(t *testing.T, url, ctype, encoding string, body []byte) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp, b.String()
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// HTTP: both encodings and gzip are folded; malformed, oversized (before
// and after decompression), wrongly typed and wrongly sent requests get a
// clear status and a count, and fold nothing.
func TestHTTPReceiver(t *testing.T) {
	s := &sink{}
	r := New(Options{Sink: s, MaxRequestSize: 4096})
	srv := httptest.NewServer(r)
	defer srv.Close()
	url := srv.URL + "/v1/traces"

	// Each encoding carries spans of its own: the same spans sent again
	// would be copies, counted once (TestDuplicatesCountOnce).
	export := func() ptraceotlp.ExportRequest {
		return ptraceotlp.NewExportRequestFromTraces(traces("vllm", good("m"), good(""), map[string]any{"http.route": "/v1/chat"}))
	}
	pb, _ := export().MarshalProto()
	js, _ := export().MarshalJSON()
	pb2, _ := export().MarshalProto()
	for _, c := range []struct {
		ctype, enc string
		body       []byte
	}{
		{"application/x-protobuf", "", pb},
		{"application/json", "", js},
		{"application/x-protobuf", "gzip", gz(pb2)},
	} {
		resp, body := post(t, url, c.ctype, c.enc, c.body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", c.ctype, c.enc, resp.StatusCode, body)
		}
		// The span without a model is dropped and reported as rejected.
		out := ptraceotlp.NewExportResponse()
		if c.ctype == "application/json" {
			err := out.UnmarshalJSON([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
		} else if err := out.UnmarshalProto([]byte(body)); err != nil {
			t.Fatal(err)
		}
		if n := out.PartialSuccess().RejectedSpans(); n != 1 || !strings.Contains(out.PartialSuccess().ErrorMessage(), ResultNoModel) {
			t.Errorf("partial success: %d %q", n, out.PartialSuccess().ErrorMessage())
		}
	}
	if len(s.reqs) != 3 || r.Spans(ResultFolded) != 3 || r.Spans(ResultNoModel) != 3 || r.Spans(ResultNotRequest) != 3 {
		t.Errorf("folded %d; outcomes folded %d no_model %d not_request %d", len(s.reqs), r.Spans(ResultFolded), r.Spans(ResultNoModel), r.Spans(ResultNotRequest))
	}

	zeros := make([]byte, 1<<20) // 1 MiB of zeros is ~1 KiB compressed
	for _, c := range []struct {
		name, method, ctype, enc string
		body                     []byte
		status                   int
	}{
		{"GET", http.MethodGet, "", "", nil, http.StatusMethodNotAllowed},
		{"text body", http.MethodPost, "text/plain", "", pb, http.StatusUnsupportedMediaType},
		{"unknown encoding", http.MethodPost, "application/x-protobuf", "br", pb, http.StatusUnsupportedMediaType},
		{"garbage protobuf", http.MethodPost, "application/x-protobuf", "", []byte{0xff, 0xff, 0xff, 0x01}, http.StatusBadRequest},
		{"garbage JSON", http.MethodPost, "application/json", "", []byte(`{"resourceSpans": 3`), http.StatusBadRequest},
		{"not gzip", http.MethodPost, "application/x-protobuf", "gzip", pb, http.StatusBadRequest},
		{"too large", http.MethodPost, "application/x-protobuf", "", zeros[:8192], http.StatusRequestEntityTooLarge},
		{"gzip bomb", http.MethodPost, "application/x-protobuf", "gzip", gz(zeros), http.StatusRequestEntityTooLarge},
	} {
		req, _ := http.NewRequest(c.method, url, bytes.NewReader(c.body))
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		if c.enc != "" {
			req.Header.Set("Content-Encoding", c.enc)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.status)
		}
	}
	if len(s.reqs) != 3 || r.Spans(ResultFolded) != 3 {
		t.Errorf("a refused request folded something: %d", len(s.reqs))
	}
	// The error body is a google.rpc.Status the sender can read.
	resp, body := post(t, url, "application/x-protobuf", "", []byte{0xff, 0xff, 0xff, 0x01})
	var st spb.Status
	if err := proto.Unmarshal([]byte(body), &st); err != nil || resp.StatusCode != 400 || !strings.Contains(st.GetMessage(), "not an OTLP trace export") {
		t.Errorf("error body: %v %q %v", resp.StatusCode, st.GetMessage(), err)
	}
	// malformed: the three in the table and the error-body check.
	for reason, want := range map[string]uint64{RejectMethod: 1, RejectMedia: 2, RejectMalformed: 4, RejectTooLarge: 2} {
		v, _ := r.rejected.Load(TransportHTTP + "\x00" + reason)
		if v == nil || v.(interface{ Load() uint64 }).Load() != want {
			t.Errorf("rejected %s: %v, want %d", reason, v, want)
		}
	}
}

// gRPC: an export is folded, spans of an unknown service are counted as
// unmatched, and a message over the cap is refused with ResourceExhausted.
func TestGRPCReceiver(t *testing.T) {
	s := &sink{}
	r := New(Options{Sink: s, MaxRequestSize: 4096})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(r.GRPCServerOptions()...)
	r.RegisterGRPC(gs)
	go gs.Serve(l)
	defer gs.Stop()
	cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := ptraceotlp.NewGRPCClient(cc)
	td := traces("vllm", good("m"), good("m"))
	other := traces("sglang", good("m"))
	other.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	resp, err := client.Export(context.Background(), ptraceotlp.NewExportRequestFromTraces(td))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.reqs) != 2 || r.Spans(ResultUnmatched) != 1 || resp.PartialSuccess().RejectedSpans() != 1 {
		t.Errorf("folded %d unmatched %d rejected %d", len(s.reqs), r.Spans(ResultUnmatched), resp.PartialSuccess().RejectedSpans())
	}
	big := good("m")
	big["padding"] = strings.Repeat("x", 8192)
	_, err = client.Export(context.Background(), ptraceotlp.NewExportRequestFromTraces(traces("vllm", big)))
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("oversized message: %v, want ResourceExhausted", err)
	}
	if len(s.reqs) != 2 {
		t.Errorf("the oversized message folded something")
	}
}
