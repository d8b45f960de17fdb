// Package exposition is the daemon's /metrics body, cached and rendered
// again only when needed: the series cache that keeps each engine, SLO
// and cost series between renders (SeriesCache), the text it writes from
// those series' kept lines exactly as expfmt would, and the Renderer
// that merges them with a registry's families, keeps the encoded body
// and its gzip form, renders it again on the first request after a change
// (or once it is older than MaxAge), and serves it.
//
// It depends on collector (the Sink the cache implements) and snapshot,
// never on exporter; exporter owns a SeriesCache and a Renderer and is
// the only package that should depend on this one.
package exposition

import (
	"bytes"
	"compress/gzip"
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

// Use receives the series cache's families, a function writing the
// text of the family at an index (as expfmt.MetricFamilyToText would), and
// the errors of the gathering.
type Use = func(mfs []*dto.MetricFamily, text func(*bytes.Buffer, int) error, err error)

// Renderer gathers and encodes the exposition on demand: at most once per
// change, when /metrics first asks for it after a target (or the GPU
// cycle, or a reload) reported something new, instead of after every
// collection cycle. Prometheus usually scrapes every 15–60 s while the
// daemon collects every 5 s, so most eager renders were never read.
// Requests that arrive together share one render (the others wait for
// it and serve its bytes); a render reads the targets' last results and
// never waits on an engine.
type Renderer struct {
	g        prometheus.Gatherer
	engines  func(use Use)
	errors   prometheus.Counter
	duration prometheus.Gauge
	logger   *slog.Logger
	cur      atomic.Pointer[exposition]
	// stale: something changed since the last render began; busy: a
	// render is running (a request waits for it rather than serve the
	// exposition it replaces).
	stale   atomic.Bool
	busy    atomic.Bool
	minGap  time.Duration
	maxAge  time.Duration
	lastOK  atomic.Bool
	mu      sync.Mutex   // one render at a time, so a newer one is never overwritten by an older
	last    atomic.Int64 // when the last render began (Unix ns); 0: render on the next request
	renders int64        // renders so far (under mu), for tests
	spare   []byte       // a retired exposition's plain buffer, for the next render (under mu)
	zmu     sync.Mutex
	zw      *gzip.Writer // reused: a new one allocates and clears about 1 MB of tables
	spareGz []byte       // a retired exposition's gzip buffer (under zmu)
	lastGz  int
}

// Options are a Renderer's sources, its own metrics and its pace.
type Options struct {
	// Gatherer gathers the families of a registry (the daemon's own
	// series and the Go runtime's).
	Gatherer prometheus.Gatherer
	// Engines passes the engine, SLO and cost families (sorted by name)
	// to use, from the series cache (SeriesCache.GatherText), with a
	// function that writes the text of the family at an index; nil: the
	// Gatherer's families alone.
	Engines func(use Use)
	// Errors counts the renders in which something failed (a gathering
	// or an encoding); Duration is set to each render's duration. Both
	// are required.
	Errors   prometheus.Counter
	Duration prometheus.Gauge
	// Logger logs a render that fails and the next one that succeeds;
	// nil: nothing is logged.
	Logger *slog.Logger
	// MinGap: a request renders at most once per MinGap (a quarter of the
	// collection interval in the daemon: several targets finishing one
	// after the other cost one render when a scraper reads often).
	MinGap time.Duration
	// MaxAge: an exposition older than this is rendered again on the next
	// request even if nothing called Request: series that other parts of
	// the daemon register (service discovery's health) change on their
	// own, and a daemon without targets has no cycle to mark them; 0:
	// never.
	MaxAge time.Duration
}

// NewRenderer returns a renderer that has rendered nothing yet: the first
// request of /metrics serves an empty body unless Request, Invalidate or
// Render came first.
func NewRenderer(o Options) *Renderer {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Renderer{g: o.Gatherer, engines: o.Engines, errors: o.Errors, duration: o.Duration,
		logger: o.Logger, minGap: o.MinGap, maxAge: o.MaxAge}
	r.lastOK.Store(true)
	r.cur.Store(&exposition{})
	return r
}

// Request says that something changed: the next request of /metrics
// renders, unless the last render is younger than MinGap.
func (r *Renderer) Request() { r.stale.Store(true) }

// Invalidate says that something changed that the next request must see
// whatever the gap (a reload).
func (r *Renderer) Invalidate() {
	r.last.Store(0)
	r.stale.Store(true)
}

// current returns the exposition to serve, rendering it first when it is
// stale. Only one request renders; the others wait on mu and then find it
// fresh.
func (r *Renderer) current() *exposition {
	if r.maxAge > 0 && !r.stale.Load() {
		if last := r.last.Load(); last != 0 && time.Since(time.Unix(0, last)) >= r.maxAge {
			r.stale.Store(true)
		}
	}
	if r.stale.Load() || r.busy.Load() {
		r.mu.Lock()
		if last := r.last.Load(); r.stale.Load() && (last == 0 || time.Since(time.Unix(0, last)) >= r.minGap) {
			r.render()
		}
		r.mu.Unlock()
	}
	return r.cur.Load()
}

// Render gathers and encodes immediately.
func (r *Renderer) Render() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.render()
}

// render gathers and encodes; mu is held.
func (r *Renderer) render() {
	start := time.Now()
	// Cleared before gathering: a change during the render marks the
	// next one stale again.
	r.busy.Store(true) // before stale is cleared: a request sees one or the other
	defer r.busy.Store(false)
	r.stale.Store(false)
	r.last.Store(start.UnixNano())
	r.renders++
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
			r.errors.Inc()
			r.logger.Error("encoding family", "family", mf.GetName(), "err", err)
		}
	}
	write := func(engines []*dto.MetricFamily, text func(*bytes.Buffer, int) error, eerr error) {
		err = errors.Join(err, eerr)
		// Both lists are sorted by name: merge them.
		i, j := 0, 0
		for i < len(mfs) || j < len(engines) {
			if j == len(engines) || (i < len(mfs) && mfs[i].GetName() <= engines[j].GetName()) {
				encode(mfs[i])
				i++
				continue
			}
			if err := text(plain, j); err != nil {
				r.errors.Inc()
				r.logger.Error("encoding family", "family", engines[j].GetName(), "err", err)
			}
			j++
		}
	}
	if r.engines != nil {
		r.engines(write)
	} else {
		write(nil, nil, nil)
	}
	if err != nil {
		// Gather returns what it could; serve that and say what failed.
		r.errors.Inc()
		if r.lastOK.Swap(false) {
			r.logger.Error("render incomplete", "err", err)
		}
	} else if !r.lastOK.Swap(true) {
		r.logger.Info("render complete again")
	}
	prev := r.cur.Swap(&exposition{plain: plain.Bytes(), at: start})
	r.retire(prev)
	r.duration.Set(time.Since(start).Seconds())
}

// retire takes back the buffers of an exposition that is no longer
// current, unless a request is still writing it out (then the garbage
// collector has them once it is done). A request that comes to it later
// sees it retired and reads the current one.
func (r *Renderer) retire(x *exposition) {
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

// ServeHTTP writes the exposition, rendered first if it is stale.
func (r *Renderer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h := w.Header()
	h.Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	h.Set("Vary", "Accept-Encoding")
	gz := acceptsGzip(req.Header.Get("Accept-Encoding"))
	if gz {
		h.Set("Content-Encoding", "gzip")
	}
	for x := r.current(); ; x = r.cur.Load() {
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
func (r *Renderer) gzipped(x *exposition) []byte {
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

// Sizes returns the sizes of the current exposition, plain and gzip,
// compressing it first as the first request that accepts gzip does
// (benchmarks: a render and the scrape that follows it).
func (r *Renderer) Sizes() (plain, gz int) {
	for x := r.cur.Load(); ; x = r.cur.Load() {
		x.mu.RLock()
		if x.retired {
			x.mu.RUnlock()
			continue
		}
		plain, gz = len(x.plain), len(r.gzipped(x))
		x.mu.RUnlock()
		return plain, gz
	}
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
