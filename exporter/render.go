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

// exposition is one encoded /metrics body, plain and gzipped.
type exposition struct {
	plain []byte
	gz    []byte
	at    time.Time
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
	mu     sync.Mutex   // one render at a time, so a newer one is never overwritten by an older
	zw     *gzip.Writer // reused: a new one allocates and clears about 1 MB of tables
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
	var gz bytes.Buffer
	gz.Grow(len(last.gz) + len(last.gz)/8)
	if r.zw == nil {
		r.zw, _ = gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	} else {
		r.zw.Reset(&gz)
	}
	r.zw.Write(plain.Bytes())
	r.zw.Close()
	r.cur.Store(&exposition{plain: plain.Bytes(), gz: gz.Bytes(), at: start})
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
		w.Write(x.gz)
		return
	}
	w.Write(x.plain)
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
