package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/goodput-exporter/goodput-exporter/internal/fetch"
)

// DCGMExporterOptions configures the dcgm-exporter scrape backend.
type DCGMExporterOptions struct {
	// URL of dcgm-exporter's metrics, e.g. http://localhost:9400/metrics.
	URL string
	// Timeout bounds one scrape (default 5s); the caller's context may
	// end it sooner.
	Timeout time.Duration
	// MaxBodyBytes caps the body read (default 8 MiB).
	MaxBodyBytes int64
	// Proxy to reach dcgm-exporter through; nil connects directly (the
	// environment's HTTP_PROXY is never read).
	Proxy *url.URL
	// Transport replaces the network transport (an in-process source);
	// the redirect and body-cap policy still apply. Nil uses the
	// engines' transport with Proxy.
	Transport http.RoundTripper
}

// DCGMExporter reads GPUs from an existing dcgm-exporter's /metrics.
type DCGMExporter struct {
	opts   DCGMExporterOptions
	client *http.Client

	mu sync.Mutex
	// prevTotals are the last DCGM_EXP_CLOCK_EVENTS_TOTAL values per GPU.
	prevTotals map[string]map[uint64]float64
}

// NewDCGMExporter checks the URL and returns the backend; nothing is
// fetched until Collect.
func NewDCGMExporter(opts DCGMExporterOptions) (*DCGMExporter, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("dcgm-exporter: URL %q is not an http(s) URL", opts.URL)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 8 << 20
	}
	// The engines' policy: no redirect off the host, no proxy from the
	// environment, the body capped after decompression.
	var rt http.RoundTripper = fetch.NewTransport(opts.Proxy)
	if opts.Transport != nil {
		rt = opts.Transport
	}
	client, err := fetch.NewClient(opts.URL, rt)
	if err != nil {
		return nil, fmt.Errorf("dcgm-exporter: %w", err)
	}
	return &DCGMExporter{opts: opts, client: client}, nil
}

// Name implements Backend.
func (b *DCGMExporter) Name() string { return "dcgm-exporter" }

// Close implements Backend: it closes the kept-alive connection.
func (b *DCGMExporter) Close() error {
	b.client.CloseIdleConnections()
	return nil
}

// Collect implements Backend: one GET, parsed. dcgm-exporter lists no
// compute PIDs; its pod labels are kept in Device.Pods.
func (b *DCGMExporter) Collect(ctx context.Context) ([]Device, error) {
	body, err := b.fetch(ctx)
	if err != nil {
		return nil, err
	}
	s, err := parseDCGMExporter(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("dcgm-exporter %s: %w", b.opts.URL, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range s.Devices {
		d := &s.Devices[i]
		now, ok := s.ClockTotals[d.Key()]
		if !ok || d.Throttle.OK {
			continue // no running totals, or the windowed count already said
		}
		// A running total of times a reason switched on: active when it
		// rose since the last scrape. Unknown on the first scrape.
		if prev, seen := b.prevTotals[d.Key()]; seen {
			d.Throttle.OK = true
			for bit, v := range now {
				if v > prev[bit] {
					d.Throttle.Mask |= bit
				}
			}
		}
	}
	b.prevTotals = s.ClockTotals
	return s.Devices, nil
}

func (b *DCGMExporter) fetch(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.opts.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("dcgm-exporter: %w", err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("dcgm-exporter: %w", err)
	}
	defer func() { _ = resp.Body.Close() }() // a read-only body; nothing to flush
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("dcgm-exporter %s: HTTP %s", b.opts.URL, resp.Status)
	}
	// A fresh buffer each time: one odd body must not pin its size for good.
	var buf bytes.Buffer
	if _, err := fetch.ReadBody(resp.Body, b.opts.MaxBodyBytes, &buf); err != nil {
		if errors.Is(err, fetch.ErrBodyTooLarge) {
			return nil, fmt.Errorf("dcgm-exporter %s: body larger than %d bytes: %w", b.opts.URL, b.opts.MaxBodyBytes, err)
		}
		return nil, fmt.Errorf("dcgm-exporter %s: read body: %w", b.opts.URL, err)
	}
	return buf.Bytes(), nil
}
