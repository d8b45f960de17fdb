package exporter

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
)

// refCollector is the reference path: the same series as const metrics
// through client_golang's registry (what the renderer did before the
// series cache).
type refCollector struct{ e *Exporter }

func (refCollector) Describe(chan<- *prometheus.Desc) {}
func (r refCollector) Collect(ch chan<- prometheus.Metric) {
	var s collector.ConstSink
	r.e.emitSeries(&s)
	for _, m := range s {
		ch <- m
	}
}

// cachedText and refText are the engine, SLO and cost families as the
// series cache renders them (its cached text, which must also be what
// expfmt writes from its families) and as the registry gathers the same
// series.
func cachedText(t *testing.T, e *Exporter) string {
	t.Helper()
	var out string
	e.series.GatherText(e.emitSeries, func(mfs []*dto.MetricFamily, text func(*bytes.Buffer, int) error, err error) {
		if err != nil {
			t.Errorf("cached gather: %v", err)
		}
		for _, mf := range mfs {
			if !model.LegacyValidation.IsValidMetricName(mf.GetName()) {
				t.Errorf("family %q would need escaping", mf.GetName())
			}
			for _, m := range mf.Metric {
				for _, l := range m.Label {
					if !model.LegacyValidation.IsValidLabelName(l.GetName()) {
						t.Errorf("label %q of %s would need escaping", l.GetName(), mf.GetName())
					}
				}
			}
		}
		var b bytes.Buffer
		for i := range mfs {
			if err := text(&b, i); err != nil {
				t.Fatal(err)
			}
		}
		out = b.String()
		if direct := testbody.Text(t, mfs); out != direct {
			t.Errorf("cached text differs from expfmt's for the same families: %s", testbody.FirstDiff(out, direct))
		}
	})
	return out
}

func refText(t *testing.T, e *Exporter) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(refCollector{e})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("registry gather: %v", err)
	}
	return testbody.Text(t, mfs)
}

// The series cache renders exactly what client_golang's registry gathers
// from the same series as const metrics, byte for byte: on the first
// render, after every value changed, after a target and a model left, and
// after a target came back. Targets: vLLM V1 with two data-parallel ranks,
// vLLM with 100 models, SGLang and llama.cpp, static labels, two SLOs and
// per-node pricing.
func TestCachedRenderMatchesRegistry(t *testing.T) {
	cfg, err := config.Load("testdata/window/slos.yml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Pricing = &config.Pricing{Currency: "EUR", NodeHour: 12, NodeGPUs: 4}
	vllm := fixture(t, "vllm/v1-latest-from-source.prom")
	bodies := map[string][]byte{
		"vllm-a":  vllm,
		"lora":    testbody.Multiply(vllm, "meta-llama/Llama-3.1-8B-Instruct", 100),
		"sglang":  fixture(t, "sglang/sglang-from-source.prom"),
		"llama":   fixture(t, "llamacpp/server-cuda-2026-lfm2.5-8b.prom"),
		"vllm-kv": fixture(t, "vllm/v1-kops-conformance-2026-03-qwen2.5-0.5b.prom"),
	}
	var mu sync.Mutex
	e := New(Options{Interval: time.Hour, Timeout: 10 * time.Second})
	e.cfg = cfg
	all := map[string]*target{}
	for name := range bodies {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			b := bodies[name]
			mu.Unlock()
			w.Write(b)
		}))
		defer srv.Close()
		tc := config.Target{Name: name, URL: srv.URL, Engine: "auto", MaxBodySize: 32 << 20, ModelLimit: 1000,
			Model: "lfm", Labels: map[string]string{"team": "search-" + name}}
		tg, err := newTarget(tc, 10*time.Second, cfg.GoodputSLOs(), e)
		if err != nil {
			t.Fatal(err)
		}
		all[name] = tg
		e.targets[name] = tg
	}
	defer e.transport.CloseIdleConnections()
	scrapeAll := func() {
		for _, tg := range e.targets {
			tg.scrape(context.Background())
			if !tg.snapshotState().up {
				t.Fatalf("target %s down: %s", tg.cfg.Name, tg.snapshotState().lastErr)
			}
		}
	}
	check := func(when string) {
		t.Helper()
		got, want := cachedText(t, e), refText(t, e)
		if got != want {
			t.Fatalf("%s: the cached render differs from the registry's:\n%s", when, diffLines(want, got))
		}
		if n := strings.Count(got, "\n"); n < 1000 {
			t.Fatalf("%s: only %d lines rendered", when, n)
		}
	}
	scrapeAll()
	check("first scrape")
	scrapeAll()
	check("second scrape, goodput series present")
	mu.Lock()
	for name, b := range bodies {
		bodies[name] = testbody.Advance(b, 0.1)
	}
	mu.Unlock()
	scrapeAll()
	check("every value changed")
	if !strings.Contains(cachedText(t, e), `llm_slo_requests_total{engine="vllm",model="meta-llama/Llama-3.1-8B-Instruct-lora-017"`) {
		t.Fatal("the 100-model engine's SLO series are missing")
	}
	delete(e.targets, "sglang")
	mu.Lock()
	bodies["lora"] = testbody.Multiply(vllm, "meta-llama/Llama-3.1-8B-Instruct", 60)
	mu.Unlock()
	scrapeAll()
	check("a target and 40 models gone")
	e.targets["sglang"] = all["sglang"]
	scrapeAll()
	check("a target back")
}

func diffLines(want, got string) string {
	w := map[string]bool{}
	for _, l := range strings.Split(want, "\n") {
		w[l] = true
	}
	g := map[string]bool{}
	var b strings.Builder
	n := 0
	for _, l := range strings.Split(got, "\n") {
		g[l] = true
		if !w[l] && n < 20 {
			b.WriteString("+ " + l + "\n")
			n++
		}
	}
	for _, l := range strings.Split(want, "\n") {
		if !g[l] && n < 40 {
			b.WriteString("- " + l + "\n")
			n++
		}
	}
	if b.Len() == 0 {
		return "(same lines, another order)"
	}
	return b.String()
}

// A steady render allocates nothing per series and encodes nothing again
// through expfmt: the 100-model engine's ~5,000 series (15,000 lines with
// the histograms' buckets) cost a few allocations (the registry path cost
// about 135,000 per render).
func TestSteadyRenderAllocations(t *testing.T) {
	medium := fixture(t, "vllm/v1-latest-from-source.prom")
	body := testbody.Multiply(medium, "meta-llama/Llama-3.1-8B-Instruct", 100)
	srv := serveBody(t, body)
	cfg, err := config.Load("testdata/window/slos.yml")
	if err != nil {
		t.Fatal(err)
	}
	e := New(Options{Interval: time.Hour, Timeout: 10 * time.Second})
	e.cfg = cfg
	defer e.transport.CloseIdleConnections()
	tg, err := newTarget(config.Target{Name: "lora", URL: srv.URL, Engine: "auto", MaxBodySize: 32 << 20, ModelLimit: 1000, Model: "unknown"},
		10*time.Second, cfg.GoodputSLOs(), e)
	if err != nil {
		t.Fatal(err)
	}
	e.targets["lora"] = tg
	tg.scrape(context.Background())
	tg.scrape(context.Background())
	series := 0
	e.series.Gather(e.emitSeries, func(mfs []*dto.MetricFamily, _ error) {
		for _, mf := range mfs {
			series += len(mf.Metric)
		}
	})
	// The gather and the text of every family, into a buffer large
	// enough from the first render on.
	var buf bytes.Buffer
	steady := func() {
		buf.Reset()
		e.series.GatherText(e.emitSeries, func(mfs []*dto.MetricFamily, text func(*bytes.Buffer, int) error, _ error) {
			for i := range mfs {
				if err := text(&buf, i); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	steady()
	encodes := e.series.Stats().Encodes
	allocs := testing.AllocsPerRun(5, steady)
	t.Logf("%d series, %.0f allocations per steady gather and text (%d bytes)", series, allocs, buf.Len())
	if series < 5000 || allocs > 200 {
		t.Errorf("%d series cost %.0f allocations per gather and text, want at most 200", series, allocs)
	}
	st := e.series.Stats()
	for _, name := range st.Direct {
		t.Errorf("family %s is encoded through expfmt every render", name)
	}
	if st.Encodes != encodes {
		t.Errorf("steady renders encoded %d families again through expfmt, want none", st.Encodes-encodes)
	}
}

// renderNow renders the exposition and returns the body that /metrics
// serves (plain) until something changes.
func renderNow(e *Exporter) []byte {
	e.render.Render()
	w := httptest.NewRecorder()
	e.render.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	return w.Body.Bytes()
}
