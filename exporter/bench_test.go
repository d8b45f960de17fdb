package exporter

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
)

// benchExporter builds an exporter whose targets have each been scraped
// twice (so goodput series exist) from bodies served over loopback.
func benchExporter(b *testing.B, bodies map[string][]byte) *Exporter {
	b.Helper()
	cfg, err := config.Load("testdata/window/slos.yml")
	if err != nil {
		b.Fatal(err)
	}
	e := New(Options{Interval: time.Hour, Timeout: 10 * time.Second})
	e.cfg = cfg
	for name, body := range bodies {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body) }))
		b.Cleanup(srv.Close)
		tc := config.Target{Name: name, URL: srv.URL, Engine: "auto", MaxBodySize: 32 << 20, ModelLimit: 1000, Model: "unknown"}
		t, err := newTarget(tc, 10*time.Second, cfg.GoodputSLOs(), e)
		if err != nil {
			b.Fatal(err)
		}
		t.scrape(context.Background())
		t.scrape(context.Background())
		if !t.snapshotState().up {
			b.Fatalf("target %s down", name)
		}
		e.targets[name] = t
	}
	return e
}

// BenchmarkRender is one /metrics render: gather every target's series and
// encode them once, plain and gzip (as the first Prometheus scrape after a
// render does). Later scrapes only copy bytes.
func BenchmarkRender(b *testing.B) {
	medium := mustRead(b, "../collector/testdata/fixtures/vllm/v1-latest-from-source.prom")
	eight := map[string][]byte{}
	for i := range 8 {
		eight[fmt.Sprintf("engine-%d", i)] = medium
	}
	cases := []struct {
		name   string
		bodies map[string][]byte
	}{
		{"8-medium-engines", eight},
		{"one-100-model-engine", map[string][]byte{"lora": testbody.Multiply(medium, "meta-llama/Llama-3.1-8B-Instruct", 100)}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			e := benchExporter(b, c.bodies)
			b.ReportAllocs()
			for b.Loop() {
				e.render.now()
				e.render.gzipped(e.render.cur.Load()) // a Prometheus scrape follows
			}
			out := e.render.cur.Load()
			b.ReportMetric(float64(len(out.plain)), "plain-bytes")
			b.ReportMetric(float64(len(out.gz)), "gzip-bytes")
		})
	}
}

// BenchmarkServe is one Prometheus scrape of /metrics: a copy of the
// rendered bytes, whatever the engines are doing.
func BenchmarkServe(b *testing.B) {
	medium := mustRead(b, "../collector/testdata/fixtures/vllm/v1-latest-from-source.prom")
	e := benchExporter(b, map[string][]byte{"a": medium, "b": medium})
	e.render.now()
	h := e.Handler("/metrics", nil)
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}
