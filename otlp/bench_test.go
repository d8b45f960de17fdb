package otlp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// judgeSink folds every resource's requests into one exact judge with
// two SLOs, as a target does.
type judgeSink struct{ x *goodput.Exact }

func newJudgeSink() *judgeSink {
	slos := []goodput.SLO{
		{Name: "chat", Objectives: []goodput.Objective{{Kind: goodput.KindTTFT, Threshold: 0.5, Target: 0.99}, {Kind: goodput.KindTPOT, Threshold: 0.05, Target: 0.95}, {Kind: goodput.KindError, Target: 0.999}}},
		{Name: "batch", Objectives: []goodput.Objective{{Kind: goodput.KindE2E, Threshold: 30, Target: 0.99}, {Kind: goodput.KindQueue, Threshold: 1, Target: 0.99}}},
	}
	return &judgeSink{x: goodput.NewExact("t", slos, 100)}
}

func (s *judgeSink) Match(*Resource) (Dest, string) { return s, "" }

func (s *judgeSink) Fold(reqs []goodput.TracedRequest, drop func(string)) {
	for i := range reqs {
		if !s.x.Fold(&reqs[i]) {
			drop(ResultModelLimit)
		}
	}
}

// export is an encoded export request whose spans can be given new ids in
// place, so that sending it again sends new spans, not copies.
type export struct {
	body []byte
	at   []int // offsets of each span's trace id in body
	n    uint64
}

// next stamps a new number into the first eight bytes of every trace id
// (the last eight, with the span id, keep the span's own number).
func (e *export) next() []byte {
	e.n++
	for _, off := range e.at {
		binary.BigEndian.PutUint64(e.body[off:], e.n)
	}
	return e.body
}

// stream is batch(n), sent again as new spans each time.
func stream(n int) *export {
	e := &export{body: batch(n)}
	first := lastID.Load() - uint64(n) + 1
	for i := range uint64(n) {
		var tid [16]byte
		tid[0] = 0xab
		binary.BigEndian.PutUint64(tid[8:], first+i)
		off := bytes.Index(e.body, tid[:])
		if off < 0 {
			panic("trace id not found in the encoded export")
		}
		e.at = append(e.at, off)
	}
	return e
}

// batch is one export of n request spans as a vLLM engine sends them
// (the Python SDK's BatchSpanProcessor sends up to 512 at a time), with
// latencies that vary from span to span.
func batch(n int) []byte {
	spans := make([]map[string]any, n)
	for i := range spans {
		spans[i] = map[string]any{
			AttrModel: "llama", AttrE2E: 1 + float64(i%50)/10, AttrTTFT: 0.05 + float64(i%40)/50, AttrQueue: float64(i%30) / 20,
			AttrDecode: 0.9 + float64(i%50)/10, AttrCompletionTokens: int64(20 + i%200), AttrPromptTokens: int64(500),
			AttrFinishReasons: `["stop"]`, "gen_ai.request.id": fmt.Sprintf("cmpl-%d", i),
		}
	}
	b, err := ptraceotlp.NewExportRequestFromTraces(traces("vllm", spans...)).MarshalProto()
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkReceive measures the whole path of one export request of 512
// spans over HTTP: read the body, decode the protobuf, judge each request
// against two SLOs, answer. spans/s is per core (run with -cpu 1).
func BenchmarkReceive(b *testing.B) {
	ex := stream(512)
	r := New(Options{Sink: newJudgeSink()})
	b.SetBytes(int64(len(ex.body)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		req := httptest.NewRequest(http.MethodPost, "/v1/traces", bytes.NewReader(ex.next()))
		req.Header.Set("Content-Type", "application/x-protobuf")
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code, w.Body.String())
		}
	}
	b.ReportMetric(float64(512*b.N)/b.Elapsed().Seconds(), "spans/s")
}

// heapAfterGC is the live heap.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkSustainedStream folds a long stream of exports and reports how
// much the live heap grew between the first 100 and the end: spans are
// folded into counts, never stored, so it stays flat however long the
// stream.
func BenchmarkSustainedStream(b *testing.B) {
	ex := stream(512)
	sink := newJudgeSink()
	r := New(Options{Sink: sink})
	send := func() {
		req := httptest.NewRequest(http.MethodPost, "/v1/traces", bytes.NewReader(ex.next()))
		req.Header.Set("Content-Type", "application/x-protobuf")
		r.ServeHTTP(httptest.NewRecorder(), req)
	}
	for range 100 {
		send()
	}
	before := heapAfterGC()
	b.ResetTimer()
	for range b.N {
		send()
	}
	b.StopTimer()
	after := heapAfterGC()
	b.ReportMetric(float64(int64(after)-int64(before)), "heap-growth-B")
	b.ReportMetric(float64(512*(b.N+100)), "spans-folded")
}

// Memory stays flat under a stream: after 50 000 more spans the live heap
// has not grown by a tenth of what storing them would take (a span's
// request alone is over 100 bytes decoded).
func TestMemoryFlatUnderStream(t *testing.T) {
	if testing.Short() {
		t.Skip("folds 60 000 spans")
	}
	ex := stream(500)
	sink := newJudgeSink()
	// The duplicate filter holds what it is allowed to (here 20,000
	// hashes, not 60,000): that is its bound, not a leak; the spans
	// themselves must not be kept.
	r := New(Options{Sink: sink, DedupSpans: 20000})
	send := func() {
		req := httptest.NewRequest(http.MethodPost, "/v1/traces", bytes.NewReader(ex.next()))
		req.Header.Set("Content-Type", "application/x-protobuf")
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code != 200 {
			t.Fatal(w.Code)
		}
	}
	for range 20 {
		send()
	}
	before := heapAfterGC()
	for range 100 {
		send()
	}
	after := heapAfterGC()
	if m := sink.x.Model("llama"); m == nil || m.Requests != 60000 {
		t.Fatalf("folded %+v", m)
	}
	// 50 000 spans × 100 B = 5 MB if they were kept; allow 500 kB of noise.
	if growth := int64(after) - int64(before); growth > 500_000 {
		t.Errorf("live heap grew by %d bytes over 50 000 spans", growth)
	}
}

// BenchmarkDedup is the duplicate filter's cost per span, at its default
// size and in its steady state (generations rotating), and the live heap
// it holds when full, per span remembered: the figure behind the memory
// bound stated in dedup.go.
func BenchmarkDedup(b *testing.B) {
	before := heapAfterGC()
	d := newDedup(time.Hour, DefaultDedupSpans)
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	tid[0] = 0xcd
	n := uint64(0)
	add := func() bool {
		n++
		binary.BigEndian.PutUint64(tid[8:], n)
		binary.BigEndian.PutUint64(sid[:], n)
		return d.seen(tid, sid)
	}
	// Fill both generations, so the measure is of a full filter.
	for range DefaultDedupSpans {
		add()
	}
	full := heapAfterGC()
	b.ResetTimer()
	for range b.N {
		if add() {
			b.Fatal("a new span taken for a copy")
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(full-before)/DefaultDedupSpans, "heap-B/span")
	b.ReportMetric(float64(full-before), "heap-B")
}
