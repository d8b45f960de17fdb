package exporter

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
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

func encodeFamilies(t *testing.T, mfs []*dto.MetricFamily) string {
	t.Helper()
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// cachedText and refText are the engine, SLO and cost families as the
// series cache renders them (its cached text, which must also be what
// expfmt writes from its families) and as the registry gathers the same
// series.
func cachedText(t *testing.T, e *Exporter) string {
	t.Helper()
	var out string
	e.series.gatherText(e.emitSeries, func(mfs []*dto.MetricFamily, text func(*bytes.Buffer, int) error, err error) {
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
		if direct := encodeFamilies(t, mfs); out != direct {
			t.Errorf("cached text differs from expfmt's for the same families: %s", firstDiff(out, direct))
		}
	})
	return out
}

// firstDiff shows where two texts part.
func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-80)
	return fmt.Sprintf("at byte %d: %q vs %q", i, a[from:min(len(a), i+80)], b[from:min(len(b), i+80)])
}

func refText(t *testing.T, e *Exporter) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(refCollector{e})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("registry gather: %v", err)
	}
	return encodeFamilies(t, mfs)
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

// A histogram whose bounds change is rebuilt with the new buckets; a
// series sent twice in one render is an error, as in the registry; a
// series no longer sent leaves the family, and an empty family goes.
func TestSeriesCacheLayoutDuplicatesAndRemoval(t *testing.T) {
	c := newSeriesCache()
	desc := prometheus.NewDesc("h_seconds", "h", []string{"model"}, nil)
	g := prometheus.NewDesc("g", "g", []string{"model"}, nil)
	render := func(emit func(collector.Sink)) (string, error) {
		var out string
		var gerr error
		c.gather(emit, func(mfs []*dto.MetricFamily, err error) {
			out, gerr = encodeFamilies(t, mfs), err
		})
		return out, gerr
	}
	h1 := &snapshot.Histogram{Bounds: []float64{1, 2}, Cumulative: []float64{1, 3}, Count: 4, Sum: 5}
	h2 := &snapshot.Histogram{Bounds: []float64{0.5, 1, 2}, Cumulative: []float64{0, 2, 2}, Count: 2, Sum: 1.5}
	out, err := render(func(s collector.Sink) {
		s.Histogram(desc, h1, collector.Labels("a"))
		s.Sample(g, prometheus.GaugeValue, 7, collector.Labels("a"))
	})
	if err != nil || !strings.Contains(out, `h_seconds_bucket{model="a",le="2"} 3`) || !strings.Contains(out, `g{model="a"} 7`) {
		t.Fatalf("first render (err %v):\n%s", err, out)
	}
	out, err = render(func(s collector.Sink) {
		s.Histogram(desc, h2, collector.Labels("a"))
		s.Sample(g, prometheus.GaugeValue, 8, collector.Labels("a"))
		s.Sample(g, prometheus.GaugeValue, 9, collector.Labels("a"))
	})
	for _, want := range []string{`h_seconds_bucket{model="a",le="0.5"} 0`, `h_seconds_bucket{model="a",le="1"} 2`, `h_seconds_count{model="a"} 2`, `g{model="a"} 8`} {
		if !strings.Contains(out, want) {
			t.Errorf("after a layout change, %q missing:\n%s", want, out)
		}
	}
	if err == nil || !strings.Contains(err.Error(), "collected twice") {
		t.Errorf("a series sent twice: err = %v", err)
	}
	out, err = render(func(s collector.Sink) { s.Sample(g, prometheus.GaugeValue, 1, collector.Labels("b")) })
	if err != nil || out != "# HELP g g\n# TYPE g gauge\ng{model=\"b\"} 1\n" {
		t.Errorf("after removal (err %v):\n%s", err, out)
	}
	if len(c.series) != 1 || len(c.fams) != 1 || len(c.descs) != 1 {
		t.Errorf("cache holds %d series, %d families, %d descriptors; want 1 each", len(c.series), len(c.fams), len(c.descs))
	}
	// A label set that does not fit the descriptor is an error for that
	// series alone.
	_, err = render(func(s collector.Sink) {
		s.Sample(g, prometheus.GaugeValue, 1, collector.Labels("b"))
		s.Sample(g, prometheus.GaugeValue, 1, collector.Labels("c", "extra"))
	})
	if err == nil {
		t.Error("a wrong label count was not reported")
	}
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
	e.series.gather(e.emitSeries, func(mfs []*dto.MetricFamily, _ error) {
		for _, mf := range mfs {
			series += len(mf.Metric)
		}
	})
	// The gather and the text of every family, into a buffer large
	// enough from the first render on.
	var buf bytes.Buffer
	steady := func() {
		buf.Reset()
		e.series.gatherText(e.emitSeries, func(mfs []*dto.MetricFamily, text func(*bytes.Buffer, int) error, _ error) {
			for i := range mfs {
				if err := text(&buf, i); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	steady()
	encodes := e.series.textEncodes
	allocs := testing.AllocsPerRun(5, steady)
	t.Logf("%d series, %.0f allocations per steady gather and text (%d bytes)", series, allocs, buf.Len())
	if series < 5000 || allocs > 200 {
		t.Errorf("%d series cost %.0f allocations per gather and text, want at most 200", series, allocs)
	}
	for name, f := range e.series.fams {
		if f.direct {
			t.Errorf("family %s is encoded through expfmt every render", name)
		}
	}
	if e.series.textEncodes != encodes {
		t.Errorf("steady renders encoded %d families again through expfmt, want none", e.series.textEncodes-encodes)
	}
}

// The cache guesses each series from the order of the last render; the
// guess must never give another series' entry. Series sent in another
// order, one that leaves and comes back, and a new one in between: each
// render is what a fresh cache (no guesses) gives for the same series,
// and its values are the ones sent (worked by hand in want).
func TestSeriesCacheGuessesNeverMislead(t *testing.T) {
	a := prometheus.NewDesc("a", "a", []string{"x"}, nil)
	b := prometheus.NewDesc("b", "b", []string{"x"}, nil)
	type sample struct {
		d *prometheus.Desc
		x string
		v float64
	}
	renders := []struct {
		send []sample
		want string
	}{
		{[]sample{{a, "1", 1}, {a, "2", 2}, {b, "1", 3}}, "a{x=\"1\"} 1\na{x=\"2\"} 2\n# HELP b b\n# TYPE b gauge\nb{x=\"1\"} 3\n"},
		{[]sample{{b, "1", 4}, {a, "2", 5}, {a, "1", 6}}, "a{x=\"1\"} 6\na{x=\"2\"} 5\n# HELP b b\n# TYPE b gauge\nb{x=\"1\"} 4\n"},
		{[]sample{{a, "1", 7}, {b, "1", 8}}, "a{x=\"1\"} 7\n# HELP b b\n# TYPE b gauge\nb{x=\"1\"} 8\n"},
		{[]sample{{a, "1", 10}, {a, "2", 9}, {a, "3", 12}, {b, "1", 11}}, "a{x=\"1\"} 10\na{x=\"2\"} 9\na{x=\"3\"} 12\n# HELP b b\n# TYPE b gauge\nb{x=\"1\"} 11\n"},
		{[]sample{{a, "1", 13}, {a, "2", 14}, {a, "3", 15}, {b, "1", 16}}, "a{x=\"1\"} 13\na{x=\"2\"} 14\na{x=\"3\"} 15\n# HELP b b\n# TYPE b gauge\nb{x=\"1\"} 16\n"},
	}
	render := func(c *seriesCache, send []sample) string {
		var out string
		c.gather(func(s collector.Sink) {
			for _, x := range send {
				s.Sample(x.d, prometheus.GaugeValue, x.v, collector.Labels(x.x))
			}
		}, func(mfs []*dto.MetricFamily, err error) {
			if err != nil {
				t.Fatal(err)
			}
			out = encodeFamilies(t, mfs)
		})
		return out
	}
	c := newSeriesCache()
	for i, r := range renders {
		got := render(c, r.send)
		if fresh := render(newSeriesCache(), r.send); got != fresh {
			t.Fatalf("render %d:\n%s\na fresh cache:\n%s", i, got, fresh)
		}
		if want := "# HELP a a\n# TYPE a gauge\n" + r.want; got != want {
			t.Fatalf("render %d:\n%s\nwant:\n%s", i, got, want)
		}
	}
}
