package exposition

import (
	"bytes"
	"compress/gzip"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// counterGatherer returns two gauges with the same value, one more on each
// Gather, padded so that a body spans many buffer pages.
type counterGatherer struct{ n atomic.Int64 }

func (g *counterGatherer) Gather() ([]*dto.MetricFamily, error) {
	v := float64(g.n.Add(1))
	fam := func(name string) *dto.MetricFamily {
		mf := &dto.MetricFamily{Name: &name, Type: dto.MetricType_GAUGE.Enum()}
		for i := range 200 {
			lv := strings.Repeat("x", i)
			mf.Metric = append(mf.Metric, &dto.Metric{
				Label: []*dto.LabelPair{{Name: strPtr("pad"), Value: &lv}},
				Gauge: &dto.Gauge{Value: &v},
			})
		}
		return mf
	}
	return []*dto.MetricFamily{fam("a"), fam("b")}, nil
}

func strPtr(s string) *string { return &s }

// newTestRenderer is a renderer of g's families alone, with metrics of its
// own.
func newTestRenderer(g prometheus.Gatherer, minGap, maxAge time.Duration) *Renderer {
	return NewRenderer(Options{
		Gatherer: g,
		Errors:   prometheus.NewCounter(prometheus.CounterOpts{Name: "errors_total", Help: "h"}),
		Duration: prometheus.NewGauge(prometheus.GaugeOpts{Name: "duration_seconds", Help: "h"}),
		Logger:   slog.New(slog.DiscardHandler),
		MinGap:   minGap,
		MaxAge:   maxAge,
	})
}

// slowWriter is a client reading a response slowly: it copies what it is
// given a few hundred bytes at a time, yielding in between, so that a
// render that took back a buffer still being written would show.
type slowWriter struct {
	h    http.Header
	body []byte
}

func (w *slowWriter) Header() http.Header { return w.h }
func (w *slowWriter) WriteHeader(int)     {}
func (w *slowWriter) Write(p []byte) (int, error) {
	for off := 0; off < len(p); off += 256 {
		w.body = append(w.body, p[off:min(off+256, len(p))]...)
		time.Sleep(time.Microsecond)
	}
	return len(p), nil
}

// Renders reuse the buffers of expositions nobody reads any more; a
// request that is writing one out keeps it. Slow readers of /metrics
// (plain and gzip) while renders run back to back must always get one
// whole exposition: it parses, and its two families carry the same value.
func TestServeWhileRenderingIsNeverTorn(t *testing.T) {
	r := newTestRenderer(&counterGatherer{}, 0, 0)
	r.Render()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var bodies atomic.Int64
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				req := httptest.NewRequest("GET", "/metrics", nil)
				if i%2 == 1 {
					req.Header.Set("Accept-Encoding", "gzip")
				}
				w := &slowWriter{h: http.Header{}}
				r.ServeHTTP(w, req)
				body := w.body
				if i%2 == 1 {
					zr, err := gzip.NewReader(bytes.NewReader(body))
					if err != nil {
						t.Errorf("gzip: %v", err)
						return
					}
					if body, err = io.ReadAll(zr); err != nil {
						t.Errorf("a torn gzip body: %v", err)
						return
					}
				}
				checkWhole(t, string(body))
				bodies.Add(1)
			}
		}()
	}
	// Renders back to back, half of them asked for by the readers
	// themselves (on demand: the first reader after a change renders).
	for i := range 300 {
		if i%2 == 0 {
			r.Render()
		} else {
			r.Request()
			time.Sleep(50 * time.Microsecond)
		}
	}
	stop.Store(true)
	wg.Wait()
	if bodies.Load() < 4 {
		t.Fatalf("only %d bodies read", bodies.Load())
	}
	r.mu.Lock()
	renders := r.renders
	r.mu.Unlock()
	if renders <= 151 {
		t.Errorf("%d renders: the readers rendered none of the 150 asked for", renders)
	}
}

// scrapeOnce reads the renderer as a Prometheus scrape does and returns
// the body.
func scrapeOnce(r *Renderer) string {
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	return w.Body.String()
}

// The exposition is rendered when /metrics asks for it after a change,
// not when the change happens; once per change; and a change within
// minGap of the last render waits for the gap.
func TestRenderOnDemand(t *testing.T) {
	g := &counterGatherer{}
	const gap = 200 * time.Millisecond
	r := newTestRenderer(g, gap, 0)
	r.Request() // a target reported
	r.Request() // and another
	if n := g.n.Load(); n != 0 {
		t.Fatalf("%d renders before anyone asked", n)
	}
	body := scrapeOnce(r)
	if n := g.n.Load(); n != 1 || !strings.Contains(body, "} 1\n") {
		t.Fatalf("after the first scrape: %d renders, want 1 (body of render 1)", n)
	}
	scrapeOnce(r)
	if n := g.n.Load(); n != 1 {
		t.Fatalf("a second scrape with nothing new rendered again: %d renders", n)
	}
	r.Request()
	if body := scrapeOnce(r); g.n.Load() != 1 || !strings.Contains(body, "} 1\n") {
		t.Fatalf("a change within %v of the last render was rendered at once: %d renders", gap, g.n.Load())
	}
	time.Sleep(gap)
	if body := scrapeOnce(r); g.n.Load() != 2 || !strings.Contains(body, "} 2\n") {
		t.Fatalf("a change older than the gap: %d renders, want 2 (body of render 2)", g.n.Load())
	}
	// A reload is shown on the next scrape whatever the gap.
	r.Invalidate()
	if body := scrapeOnce(r); g.n.Load() != 3 || !strings.Contains(body, "} 3\n") {
		t.Fatalf("after invalidate: %d renders, want 3", g.n.Load())
	}
}

// blockingGatherer holds every Gather until release is closed, and counts.
type blockingGatherer struct {
	counterGatherer
	entered chan struct{}
	release chan struct{}
}

func (g *blockingGatherer) Gather() ([]*dto.MetricFamily, error) {
	g.entered <- struct{}{}
	<-g.release
	return g.counterGatherer.Gather()
}

// Scrapes that arrive while a render runs wait for it and serve its bytes:
// 8 concurrent scrapes after one change cost one render.
func TestConcurrentScrapesShareOneRender(t *testing.T) {
	g := &blockingGatherer{entered: make(chan struct{}, 16), release: make(chan struct{})}
	r := newTestRenderer(g, 0, 0)
	r.Request()
	var wg sync.WaitGroup
	bodies := make([]string, 8)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bodies[i] = scrapeOnce(r)
		}()
	}
	<-g.entered // one scrape renders; the others queue behind it
	time.Sleep(50 * time.Millisecond)
	close(g.release)
	wg.Wait()
	if n := g.n.Load(); n != 1 {
		t.Errorf("%d renders for 8 concurrent scrapes of one change, want 1", n)
	}
	for i, b := range bodies {
		if b != bodies[0] || !strings.Contains(b, "} 1\n") {
			t.Errorf("scrape %d served another body: %.200q", i, b)
		}
	}
}

func checkWhole(t *testing.T, body string) {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Errorf("a torn body: %v", err)
		return
	}
	a, b := mfs["a"], mfs["b"]
	if a == nil || b == nil || len(a.Metric) != 200 || len(b.Metric) != 200 {
		t.Errorf("a body without its 2 × 200 series")
		return
	}
	v := a.Metric[0].GetGauge().GetValue()
	for _, mf := range []*dto.MetricFamily{a, b} {
		for _, m := range mf.Metric {
			if m.GetGauge().GetValue() != v {
				t.Errorf("a body mixing two renders: %v and %v", v, m.GetGauge().GetValue())
				return
			}
		}
	}
}

// An exposition older than maxAge is rendered again on the next scrape
// though nothing asked for it: series registered by other parts of the
// daemon (discovery's health) change with no target to say so.
func TestRenderAgainAfterMaxAge(t *testing.T) {
	g := &counterGatherer{}
	const gap, age = 10 * time.Millisecond, 150 * time.Millisecond
	r := newTestRenderer(g, gap, age)
	r.Request()
	scrapeOnce(r)
	time.Sleep(2 * gap)
	if scrapeOnce(r); g.n.Load() != 1 {
		t.Fatalf("rendered again before maxAge with nothing new: %d renders", g.n.Load())
	}
	time.Sleep(age)
	if body := scrapeOnce(r); g.n.Load() != 2 || !strings.Contains(body, "} 2\n") {
		t.Fatalf("an exposition older than maxAge was served again: %d renders", g.n.Load())
	}
}
