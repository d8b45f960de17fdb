package exporter

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
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
	b.Cleanup(e.transport.CloseIdleConnections)
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
				e.render.Render()
				e.render.Sizes() // a Prometheus scrape follows: the gzip
			}
			plain, gz := e.render.Sizes()
			b.ReportMetric(float64(plain), "plain-bytes")
			b.ReportMetric(float64(gz), "gzip-bytes")
		})
	}
}

// BenchmarkServe is one Prometheus scrape of /metrics: a copy of the
// rendered bytes, whatever the engines are doing.
func BenchmarkServe(b *testing.B) {
	medium := mustRead(b, "../collector/testdata/fixtures/vllm/v1-latest-from-source.prom")
	e := benchExporter(b, map[string][]byte{"a": medium, "b": medium})
	e.render.Render()
	h := e.Handler("/metrics", nil)
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}

// BenchmarkRenderVsParse interleaves, in each iteration, one steady-state
// parse of the 100-model engine's body (as every scrape after the first),
// one render of the series it yields, and the gzip of that render, so
// that all three are measured under the same load; it reports each in
// ms/op and the render's cost over the parse's.
func BenchmarkRenderVsParse(b *testing.B) {
	medium := mustRead(b, "../collector/testdata/fixtures/vllm/v1-latest-from-source.prom")
	body := testbody.Multiply(medium, "meta-llama/Llama-3.1-8B-Instruct", 100)
	e := benchExporter(b, map[string][]byte{"lora": body})
	p, err := collector.NewParser(snapshot.VLLM, collector.ParseOptions{DefaultModel: "unknown", ModelLimit: 1000})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.Parse(body, "", time.Now()); err != nil {
		b.Fatal(err)
	}
	e.render.Render()
	var parse, render, gz time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := p.Parse(body, "", t0); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		e.render.Render()
		t2 := time.Now()
		e.render.Sizes()
		t3 := time.Now()
		parse, render, gz = parse+t1.Sub(t0), render+t2.Sub(t1), gz+t3.Sub(t2)
	}
	n := float64(b.N)
	b.ReportMetric(parse.Seconds()*1e3/n, "parse-ms/op")
	b.ReportMetric(render.Seconds()*1e3/n, "render-ms/op")
	b.ReportMetric(gz.Seconds()*1e3/n, "gzip-ms/op")
	b.ReportMetric(render.Seconds()/parse.Seconds(), "render/parse")
}

// BenchmarkReload is one reload from no target to n targets and one back
// to none (each a whole Reload and the render of the next /metrics read),
// with n idle targets that have not scraped yet (they wait for their first
// random offset of the hour): what they export is their own series, 14
// per target. The first render after adding learns their series; render-ms
// is the next one, what every later scrape costs with the n targets;
// heap-MiB is the live heap with them running.
func BenchmarkReload(b *testing.B) {
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("vllm:num_requests_running{model_name=\"m\"} 1\n"))
	}))
	defer engine.Close()
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("%d-targets", n), func(b *testing.B) {
			full, err := manyTargets(n, engine.URL)()
			if err != nil {
				b.Fatal(err)
			}
			empty, _ := config.Parse(nil)
			var next *config.Config = empty
			load := func() (*config.Config, error) { return next, nil }
			ex := New(Options{Interval: time.Hour, Timeout: time.Second})
			ctx, cancel := context.WithCancel(context.Background())
			defer func() { cancel(); ex.Wait() }()
			if err := ex.Start(ctx, load); err != nil {
				b.Fatal(err)
			}
			var add, remove, render time.Duration
			var heap float64
			for b.Loop() {
				next = full
				t0 := time.Now()
				if err := ex.Reload(load); err != nil {
					b.Fatal(err)
				}
				ex.render.Render()
				t1 := time.Now()
				ex.render.Render()
				render += time.Since(t1)
				var ms runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms)
				heap = float64(ms.HeapAlloc) / (1 << 20)
				next = empty
				t2 := time.Now()
				if err := ex.Reload(load); err != nil {
					b.Fatal(err)
				}
				ex.render.Render()
				add, remove = add+t1.Sub(t0), remove+time.Since(t2)
			}
			b.ReportMetric(add.Seconds()*1e3/float64(b.N), "add-ms/op")
			b.ReportMetric(render.Seconds()*1e3/float64(b.N), "render-ms/op")
			b.ReportMetric(remove.Seconds()*1e3/float64(b.N), "remove-ms/op")
			b.ReportMetric(heap, "heap-MiB")
		})
	}
}
