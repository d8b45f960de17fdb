package collector

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

var (
	synthOnce    sync.Once
	synthBody    []byte
	synth100Once sync.Once
	synth100Body []byte
)

// syntheticVLLM is a ~30,000-sample, ~4 MB vLLM body: 100 models built
// from the families of v1-latest-from-source.prom.
func syntheticVLLM(tb testing.TB) []byte {
	synthOnce.Do(func() {
		src := mustRead(tb, "testdata/fixtures/vllm/v1-latest-from-source.prom")
		synthBody = testbody.Multiply(src, "meta-llama/Llama-3.1-8B-Instruct", 100)
	})
	return synthBody
}

// synthetic100k is the same at 302 models: about 100,000 samples, 12 MB.
func synthetic100k(tb testing.TB) []byte {
	synth100Once.Do(func() {
		src := mustRead(tb, "testdata/fixtures/vllm/v1-latest-from-source.prom")
		synth100Body = testbody.Multiply(src, "meta-llama/Llama-3.1-8B-Instruct", 302)
	})
	return synth100Body
}

func mustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

type benchInput struct {
	name string
	body []byte
}

func benchInputs(b *testing.B) []benchInput {
	return []benchInput{
		{"vllm-v1-latest", mustRead(b, "testdata/fixtures/vllm/v1-latest-from-source.prom")},
		{"vllm-v1-kops", mustRead(b, "testdata/fixtures/vllm/v1-kops-conformance-2026-03-qwen2.5-0.5b.prom")},
		{"sglang", mustRead(b, "testdata/fixtures/sglang/sglang-from-source.prom")},
		{"synthetic-30k", syntheticVLLM(b)},
		{"synthetic-100k", synthetic100k(b)},
	}
}

// report adds per-sample figures to the benchmark line: wall time, and
// the process's CPU time since cpu0 (the garbage collector's work
// included), which a loaded machine does not stretch.
func report(b *testing.B, samples int, cpu0 time.Duration) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(samples), "ns/sample")
	if cpu0 > 0 {
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/float64(samples), "cpu-ns/sample")
	}
}

// BenchmarkParse compares this package's parser (warm series cache, what a
// target costs every cycle) with expfmt's TextParser and Prometheus'
// PromParser reading the same bytes in the same run. allocs/op divided by
// the sample count gives allocations per sample.
func BenchmarkParse(b *testing.B) {
	for _, in := range benchInputs(b) {
		samples := testbody.Samples(in.body)
		engine, _ := Detect(in.body)
		b.Run(in.name+"/goodput", func(b *testing.B) {
			p, _ := NewParser(engine, ParseOptions{DefaultModel: "unknown", ModelLimit: 1000})
			if _, err := p.Parse(in.body, "", time.Now()); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(in.body)))
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := p.Parse(in.body, "", time.Now()); err != nil {
					b.Fatal(err)
				}
			}
			report(b, samples, cpu0)
		})
		b.Run(in.name+"/expfmt", func(b *testing.B) {
			b.SetBytes(int64(len(in.body)))
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				tp := expfmt.NewTextParser(model.LegacyValidation)
				if _, err := tp.TextToMetricFamilies(bytes.NewReader(in.body)); err != nil {
					b.Fatal(err)
				}
			}
			report(b, samples, cpu0)
		})
		b.Run(in.name+"/promparser", func(b *testing.B) {
			st := labels.NewSymbolTable()
			var lset labels.Labels
			b.SetBytes(int64(len(in.body)))
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				p := textparse.NewPromParser(in.body, st, false)
				for {
					et, err := p.Next()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					if et == textparse.EntrySeries {
						p.Series()
						p.Labels(&lset)
					}
				}
			}
			report(b, samples, cpu0)
		})
		b.Run(in.name+"/linescan", func(b *testing.B) {
			b.SetBytes(int64(len(in.body)))
			b.ReportAllocs()
			n := 0
			cpu0 := cpuTime()
			for b.Loop() {
				for rest := in.body; len(rest) > 0; {
					i := bytes.IndexByte(rest, '\n')
					if i < 0 {
						break
					}
					if rest[0] != '#' {
						n++
					}
					rest = rest[i+1:]
				}
			}
			report(b, samples, cpu0)
		})
	}
}

// BenchmarkScrape is the whole collection cycle of one target: HTTP GET of
// the 30,000-sample body over loopback, parse, normalize, restart check.
func BenchmarkScrape(b *testing.B) {
	body := syntheticVLLM(b)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	}))
	defer srv.Close()
	sc, err := NewScraper(ScraperConfig{Name: "b", URL: srv.URL, Timeout: 10 * time.Second, MaxBody: 32 << 20,
		Parse: ParseOptions{ModelLimit: 1000}})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := sc.Scrape(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, _, err := sc.Scrape(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	report(b, testbody.Samples(body), cpu0)
}

func TestSyntheticBodyIsWhatTheBenchmarkClaims(t *testing.T) {
	body := syntheticVLLM(t)
	n := testbody.Samples(body)
	if n < 28000 || n > 40000 || len(body) < 2<<20 {
		t.Fatalf("synthetic body: %d samples, %d bytes", n, len(body))
	}
	p, _ := NewParser(snapshot.VLLM, ParseOptions{ModelLimit: 1000})
	s, err := p.Parse(body, "", time.Now())
	if err != nil || len(s.Models) != 100 || len(s.Errors) != 0 {
		t.Fatalf("models %d errors %v err %v", len(s.Models), s.Errors, err)
	}
	t.Logf("%d samples, %d bytes", n, len(body))
}
