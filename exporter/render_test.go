package exporter

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
	self := newSelfMetrics(prometheus.NewRegistry())
	r := newRenderer(&counterGatherer{}, nil, self, slog.New(slog.DiscardHandler))
	r.now()
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
	for range 300 {
		r.now()
	}
	stop.Store(true)
	wg.Wait()
	if bodies.Load() < 4 {
		t.Fatalf("only %d bodies read", bodies.Load())
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
