package main

import (
	"bytes"
	"context"
	be "encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// otlpDaemon runs serve against one vLLM target (the Qwen2.5-0.5B capture,
// which shows the model "Qwen/Qwen2.5-0.5B-Instruct"), its spans matched
// by service name "vllm-a" and no fixed model, with the OTLP HTTP receiver
// on. It returns the /metrics reader and the receiver's URL.
func otlpDaemon(t *testing.T) (metrics func() string, url string) {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("..", "..", "collector", "testdata", "fixtures", "vllm", "v1-kops-conformance-2026-03-qwen2.5-0.5b.prom"))
	if err != nil {
		t.Fatal(err)
	}
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body) }))
	t.Cleanup(engine.Close)
	cfg := filepath.Join(t.TempDir(), "cfg.yml")
	os.WriteFile(cfg, []byte(`
targets:
  - name: a
    url: `+engine.URL+`/metrics
    traces: { service_name: vllm-a }
slos:
  - name: chat
    objectives:
      ttft: { threshold: 500ms, target: 0.99 }
`), 0o600)
	web, httpAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--config.file", cfg, "--web.listen-address", web, "--otlp.http.listen-address", httpAddr, "--collect.interval", "100ms"}, io.Discard, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	metrics = func() string {
		resp, err := http.Get("http://" + web + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(metrics(), `llm_up{engine="vllm",target="a"} 1`) {
		if time.Now().After(deadline) {
			t.Fatal("the target was never scraped")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return metrics, "http://" + httpAddr + "/v1/traces"
}

var spanNumber uint64

// vllmSpans is an export from service vllm-a of one llm_request span per
// model named (TTFT 0.3 s: good against the chat SLO), each with ids of
// its own.
func vllmSpans(models ...string) []byte {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "vllm-a")
	ss := rs.ScopeSpans().AppendEmpty()
	for _, m := range models {
		spanNumber++
		sp := ss.Spans().AppendEmpty()
		sp.SetName("llm_request")
		var tid pcommon.TraceID
		var sid pcommon.SpanID
		tid[0] = 0x5e
		be.BigEndian.PutUint64(tid[8:], spanNumber)
		be.BigEndian.PutUint64(sid[:], spanNumber)
		sp.SetTraceID(tid)
		sp.SetSpanID(sid)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(time.Now().Add(-2 * time.Second)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(time.Now().Add(-time.Second)))
		a := sp.Attributes()
		a.PutStr("gen_ai.response.model", m)
		a.PutDouble("gen_ai.latency.time_to_first_token", 0.3)
		a.PutDouble("gen_ai.latency.e2e", 1.2)
		a.PutInt("gen_ai.usage.completion_tokens", 12)
	}
	b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		panic(err)
	}
	return b
}

func postSpans(t *testing.T, url string, body []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export: HTTP %d", resp.StatusCode)
	}
}

func waitMetrics(t *testing.T, metrics func() string, what string, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := metrics()
		missing := ""
		for _, w := range want {
			if !strings.Contains(m, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %q in /metrics", what, missing)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// One request naming 100 made-up models, then the engine's real spans:
// the made-up models take the 4 slots of models the engine has not shown
// (96 refused as model_limit), and the real model, which the engine's
// /metrics show, is still folded. Without the separate budget the 100
// made-up models filled the target's model_limit (100) and the real
// spans were refused for an hour.
func TestOTLPMadeUpModelsDoNotLockOutTheEngine(t *testing.T) {
	metrics, url := otlpDaemon(t)
	junk := make([]string, 100)
	for i := range junk {
		junk[i] = fmt.Sprintf("made-up-%03d", i)
	}
	postSpans(t, url, vllmSpans(junk...))
	postSpans(t, url, vllmSpans("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct"))
	m := waitMetrics(t, metrics, "the real model after 100 made-up ones",
		`llm_goodput_requests_total{bound="exact",engine="vllm",model="Qwen/Qwen2.5-0.5B-Instruct",slo="chat",target="a"} 2`,
		`goodput_exporter_otlp_spans_total{result="folded"} 6`,
		`goodput_exporter_otlp_spans_total{result="model_limit"} 96`)
	if n := strings.Count(m, "\n"+`llm_goodput_requests_total{bound="exact"`); n != 5 {
		t.Errorf("%d models with exact goodput, want 5 (the real one and 4 made-up):\n%s", n, grepLines(m, `llm_goodput_requests_total{bound="exact"`))
	}
}

func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// 20 spans naming 256 KiB models: refused as implausible, so /metrics and
// the live heap keep their size. Before the cap each name became the model
// label of a dozen series: /metrics went from 61 KB to 68 MB.
func TestOTLPLongModelNamesDoNotGrowMetrics(t *testing.T) {
	metrics, url := otlpDaemon(t)
	// One real span first, so that every family the spans feed exists.
	postSpans(t, url, vllmSpans("Qwen/Qwen2.5-0.5B-Instruct"))
	before := waitMetrics(t, metrics, "the first span", `goodput_exporter_otlp_spans_total{result="folded"} 1`)
	heap := heapAfterGC()
	for i := range 20 {
		postSpans(t, url, vllmSpans(strings.Repeat(string(rune('a'+i)), 256<<10)))
	}
	// Wait until the 20 spans were read, whatever became of them.
	deadline := time.Now().Add(10 * time.Second)
	after := metrics()
	for !strings.Contains(after, `goodput_exporter_otlp_spans_total{result="implausible"} 20`) && !strings.Contains(after, `goodput_exporter_otlp_spans_total{result="folded"} 21`) {
		if time.Now().After(deadline) {
			t.Fatal("the 20 spans were never counted")
		}
		time.Sleep(50 * time.Millisecond)
		after = metrics()
	}
	grown := int64(heapAfterGC()) - int64(heap)
	// The exposition differs by counter values only (a few digits); 20
	// names kept as labels would add 20 × 256 KiB per series.
	if d := len(after) - len(before); d > 1024 {
		t.Errorf("/metrics grew by %d bytes (from %d)", d, len(before))
	}
	if !strings.Contains(after, `goodput_exporter_otlp_implausible_spans_total{reason="model_name_too_long"} 20`) {
		t.Error("the long names were not refused as model_name_too_long")
	}
	if grown > 2<<20 {
		t.Errorf("the live heap grew by %d bytes after 20 names of 256 KiB (5 MiB of names)", grown)
	}
	t.Logf("/metrics %d → %d bytes; live heap grew by %d bytes", len(before), len(after), grown)
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// The OTLP bounds are refused when negative, and the in-flight bytes when
// no export of the largest size could ever be admitted; 0 is the default.
func TestOTLPBoundFlags(t *testing.T) {
	for _, c := range []struct {
		f    otlpFlags
		want string
	}{
		{otlpFlags{}, ""},
		{otlpFlags{MaxRequestSize: 4 << 20, MaxInflightBytes: 16 << 20}, ""},
		{otlpFlags{MaxInflightRequests: -1}, "must be positive"},
		{otlpFlags{DedupWindow: -time.Second}, "must be positive"},
		{otlpFlags{MaxCompletionTokens: -5}, "must be positive"},
		{otlpFlags{MaxRequestSize: 4 << 20, MaxInflightBytes: 1 << 20}, "at least --otlp.max-request-size"},
	} {
		err := c.f.validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.f, err, c.want)
		}
	}
}
