package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// serve with --otlp.grpc.listen-address: a span sent by the OpenTelemetry
// SDK's gRPC exporter as vLLM's engine "vllm-a" reaches that target's exact
// goodput; a taken OTLP port fails the start.
func TestServeReceivesOTLP(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("..", "..", "collector", "testdata", "fixtures", "vllm", "v1-kops-conformance-2026-03-qwen2.5-0.5b.prom"))
	if err != nil {
		t.Fatal(err)
	}
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body) }))
	defer engine.Close()
	cfg := filepath.Join(t.TempDir(), "cfg.yml")
	os.WriteFile(cfg, []byte(`
targets:
  - name: a
    url: `+engine.URL+`/metrics
    traces: { service_name: vllm-a, model: m }
slos:
  - name: chat
    objectives:
      ttft: { threshold: 500ms, target: 0.99 }
`), 0o600)

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	if _, _, err := runArgs("serve", "--config.file", cfg, "--web.listen-address", freeAddr(t), "--otlp.grpc.listen-address", taken.Addr().String()); err == nil || !strings.Contains(err.Error(), "--otlp.grpc.listen-address") {
		t.Errorf("a taken OTLP port: %v", err)
	}

	web, grpcAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--config.file", cfg, "--web.listen-address", web, "--otlp.grpc.listen-address", grpcAddr, "--collect.interval", "100ms"}, io.Discard, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	metrics := func() string {
		resp, err := http.Get("http://" + web + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	waitFor := func(what string, ok func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok(metrics()) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s:\n%.2000s", what, metrics())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// The daemon serves, and has scraped the target once.
	waitFor("the first scrape", func(b string) bool { return strings.Contains(b, `llm_up{engine="vllm",target="a"} 1`) })
	exp, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpoint(grpcAddr), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("vllm-a"))))
	// TTFT 0.3 s ≤ 500 ms: one good request of 12 tokens.
	_, span := tp.Tracer("vllm").Start(context.Background(), "llm_request", trace.WithAttributes(
		attribute.Float64("gen_ai.latency.time_to_first_token", 0.3), attribute.Float64("gen_ai.latency.e2e", 1.2),
		attribute.Int64("gen_ai.usage.completion_tokens", 12)))
	span.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor("exact goodput", func(b string) bool {
		return strings.Contains(b, `llm_goodput_requests_total{bound="exact",engine="vllm",model="m",slo="chat",target="a"} 1`) &&
			strings.Contains(b, `llm_goodput_tokens_total{bound="exact",engine="vllm",model="m",slo="chat",target="a"} 12`) &&
			strings.Contains(b, `goodput_exporter_otlp_spans_total{result="folded"} 1`)
	})
}
