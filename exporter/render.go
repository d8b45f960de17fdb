package exporter

import (
	"bytes"
	"compress/gzip"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// exposition is one encoded /metrics body. The gzip form is made on the
// first request that accepts it and kept for the others: Prometheus
// usually scrapes less often than the daemon collects, so compressing
// every render would mostly be wasted.
type exposition struct {
	plain  []byte
	at     time.Time
	gzOnce sync.Once
	gz     []byte
}

// renderer gathers and encodes once per collection cycle and serves the
// bytes until the next render.
type renderer struct {
	g      prometheus.Gatherer
	self   *selfMetrics
	logger *slog.Logger
	cur    atomic.Pointer[exposition]
	wake   chan struct{}
	lastOK atomic.Bool
	mu     sync.Mutex // one render at a time, so a newer one is never overwritten by an older
	zmu    sync.Mutex
	zw     *gzip.Writer // reused: a new one allocates and clears about 1 MB of tables
	lastGz int
}

func newRenderer(g prometheus.Gatherer, self *selfMetrics, logger *slog.Logger) *renderer {
	r := &renderer{g: g, self: self, logger: logger, wake: make(chan struct{}, 1)}
	r.lastOK.Store(true)
	r.cur.Store(&exposition{})
	return r
}

// request asks for a render soon; requests made while one is pending
// coalesce.
func (r *renderer) request() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// loop renders on request, at most once per minGap, so that several
// targets finishing together cost one render.
func (r *renderer) loop(ctx context.Context, minGap time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		r.now()
		select {
		case <-ctx.Done():
			return
		case <-time.After(minGap):
		}
	}
}

// now gathers and encodes immediately.
func (r *renderer) now() {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := time.Now()
	mfs, err := r.g.Gather()
	if err != nil {
		// Gather returns what it could; serve that and say what failed.
		r.self.renderErrors.Inc()
		if r.lastOK.Swap(false) {
			r.logger.Error("render incomplete", "err", err)
		}
	} else if !r.lastOK.Swap(true) {
		r.logger.Info("render complete again")
	}
	last := r.cur.Load()
	var plain bytes.Buffer
	plain.Grow(len(last.plain) + len(last.plain)/8)
	enc := expfmt.NewEncoder(&plain, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			r.self.renderErrors.Inc()
			r.logger.Error("encoding family", "family", mf.GetName(), "err", err)
		}
	}
	r.cur.Store(&exposition{plain: plain.Bytes(), at: start})
	r.self.renderDuration.Set(time.Since(start).Seconds())
}

// ServeHTTP writes the last rendered exposition.
func (r *renderer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	x := r.cur.Load()
	h := w.Header()
	h.Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	h.Set("Vary", "Accept-Encoding")
	if acceptsGzip(req.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		w.Write(r.gzipped(x))
		return
	}
	w.Write(x.plain)
}

// gzipped compresses x once, on first use.
func (r *renderer) gzipped(x *exposition) []byte {
	x.gzOnce.Do(func() {
		r.zmu.Lock()
		defer r.zmu.Unlock()
		var gz bytes.Buffer
		gz.Grow(r.lastGz + r.lastGz/8)
		if r.zw == nil {
			r.zw, _ = gzip.NewWriterLevel(&gz, gzip.BestSpeed)
		} else {
			r.zw.Reset(&gz)
		}
		r.zw.Write(x.plain)
		r.zw.Close()
		x.gz, r.lastGz = gz.Bytes(), gz.Len()
	})
	return x.gz
}

func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(coding) != "gzip" {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}
