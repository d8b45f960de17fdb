package exporter

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// exposition is one encoded /metrics body. The gzip form is made on the
// first request that accepts it and kept for the others: Prometheus
// usually scrapes less often than the daemon collects, so compressing
// every render would mostly be wasted.
//
// Its buffers go back to the renderer once a newer exposition has replaced
// it and no request is reading it (retire): allocating and clearing 2 MB
// for every render of a large engine cost as much as encoding it.
type exposition struct {
	mu      sync.RWMutex // readers hold it while they write the bytes
	retired bool         // the buffers were taken back: read the current one
	plain   []byte
	at      time.Time
	gzOnce  sync.Once
	gz      []byte
}

// renderer gathers and encodes once per collection cycle and serves the
// bytes until the next render.
type renderer struct {
	g prometheus.Gatherer // the daemon's own series and the Go runtime's
	// engines passes the engine, SLO and cost families (sorted by name)
	// to use, from the series cache; nil in tests of the renderer alone.
	engines func(use func([]*dto.MetricFamily, error))
	self    *selfMetrics
	logger  *slog.Logger
	cur     atomic.Pointer[exposition]
	wake    chan struct{}
	lastOK  atomic.Bool
	mu      sync.Mutex // one render at a time, so a newer one is never overwritten by an older
	spare   []byte     // a retired exposition's plain buffer, for the next render (under mu)
	zmu     sync.Mutex
	zw      *gzip.Writer // reused: a new one allocates and clears about 1 MB of tables
	spareGz []byte       // a retired exposition's gzip buffer (under zmu)
	lastGz  int
}

func newRenderer(g prometheus.Gatherer, engines func(func([]*dto.MetricFamily, error)), self *selfMetrics, logger *slog.Logger) *renderer {
	r := &renderer{g: g, engines: engines, self: self, logger: logger, wake: make(chan struct{}, 1)}
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
	last := r.cur.Load()
	plain := bytes.NewBuffer(r.spare[:0])
	r.spare = nil
	if want := len(last.plain) + len(last.plain)/8; plain.Cap() < want {
		plain.Grow(want)
	}
	// MetricFamilyToText is what the text encoder calls after escaping
	// names for a scraper that cannot read UTF-8 names; every name here is
	// a legacy one, so the escaping pass (a scan of every series' labels,
	// 15 % of a render) would change nothing.
	encode := func(mf *dto.MetricFamily) {
		if _, err := expfmt.MetricFamilyToText(plain, mf); err != nil {
			r.self.renderErrors.Inc()
			r.logger.Error("encoding family", "family", mf.GetName(), "err", err)
		}
	}
	write := func(engines []*dto.MetricFamily, eerr error) {
		err = errors.Join(err, eerr)
		// Both lists are sorted by name: merge them.
		i, j := 0, 0
		for i < len(mfs) || j < len(engines) {
			if j == len(engines) || (i < len(mfs) && mfs[i].GetName() <= engines[j].GetName()) {
				encode(mfs[i])
				i++
				continue
			}
			encode(engines[j])
			j++
		}
	}
	if r.engines != nil {
		r.engines(write)
	} else {
		write(nil, nil)
	}
	if err != nil {
		// Gather returns what it could; serve that and say what failed.
		r.self.renderErrors.Inc()
		if r.lastOK.Swap(false) {
			r.logger.Error("render incomplete", "err", err)
		}
	} else if !r.lastOK.Swap(true) {
		r.logger.Info("render complete again")
	}
	prev := r.cur.Swap(&exposition{plain: plain.Bytes(), at: start})
	r.retire(prev)
	r.self.renderDuration.Set(time.Since(start).Seconds())
}

// retire takes back the buffers of an exposition that is no longer
// current, unless a request is still writing it out (then the garbage
// collector has them once it is done). A request that comes to it later
// sees it retired and reads the current one.
func (r *renderer) retire(x *exposition) {
	if x == nil || !x.mu.TryLock() {
		return
	}
	x.retired = true
	plain, gz := x.plain, x.gz
	x.plain, x.gz = nil, nil
	x.mu.Unlock()
	r.spare = plain[:0]
	if gz != nil {
		r.zmu.Lock()
		r.spareGz = gz[:0]
		r.zmu.Unlock()
	}
}

// ServeHTTP writes the last rendered exposition.
func (r *renderer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h := w.Header()
	h.Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	h.Set("Vary", "Accept-Encoding")
	gz := acceptsGzip(req.Header.Get("Accept-Encoding"))
	if gz {
		h.Set("Content-Encoding", "gzip")
	}
	for {
		x := r.cur.Load()
		x.mu.RLock()
		if x.retired {
			// Replaced and taken back since the Load: a newer one is current.
			x.mu.RUnlock()
			continue
		}
		if gz {
			w.Write(r.gzipped(x))
		} else {
			w.Write(x.plain)
		}
		x.mu.RUnlock()
		return
	}
}

// gzipped compresses x once, on first use.
func (r *renderer) gzipped(x *exposition) []byte {
	x.gzOnce.Do(func() {
		r.zmu.Lock()
		defer r.zmu.Unlock()
		gz := bytes.NewBuffer(r.spareGz[:0])
		r.spareGz = nil
		if want := r.lastGz + r.lastGz/8; gz.Cap() < want {
			gz.Grow(want)
		}
		if r.zw == nil {
			r.zw, _ = gzip.NewWriterLevel(gz, gzip.BestSpeed)
		} else {
			r.zw.Reset(gz)
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
