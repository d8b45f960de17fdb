package exporter

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// manyTargets is a configuration of n targets named t-0000… on url.
func manyTargets(n int, url string) Loader {
	return func() (*config.Config, error) {
		cfg, _ := config.Parse(nil)
		ts := make([]config.Target, n)
		for i := range ts {
			ts[i] = config.Target{Name: fmt.Sprintf("t-%05d", i), URL: url}
		}
		return cfg, cfg.AddTargets(ts)
	}
}

// timeGet returns how long one GET of url took.
func timeGet(t *testing.T, url string) time.Duration {
	start := time.Now()
	resp, err := http.Get(url)
	if err != nil {
		t.Error(err)
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return time.Since(start)
}

// Reloading from 4,000 targets to 6 while another goroutine reads
// /metrics and / never makes a reader wait much more than one render
// plus one landing page (measured on this machine just before, so the
// bound follows the machine's load). Before, removing each target scanned
// every error-counter series under the exporter's lock: the reload took
// seconds and / hung for all of it.
func TestReloadAtScaleKeepsServing(t *testing.T) {
	if testing.Short() {
		t.Skip("4,000 targets")
	}
	// Targets wait a random offset of the hour before their first scrape:
	// what is measured is the reload, not 4,000 scrapes.
	engine := serveBody(t, []byte("vllm:num_requests_running{model_name=\"m\"} 1\n"))
	var mu sync.Mutex
	load := manyTargets(4000, engine.URL)
	current := func() (*config.Config, error) {
		mu.Lock()
		defer mu.Unlock()
		return load()
	}
	ex := New(Options{Interval: time.Hour, Timeout: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); ex.Wait() }()
	if err := ex.Start(ctx, current); err != nil {
		t.Fatal(err)
	}
	web := newWeb(t, ex.Handler("/metrics", nil))

	// One render and one landing page at 4,000 targets, the slowest of 3.
	var render, landing time.Duration
	for range 3 {
		start := time.Now()
		ex.render.Render()
		render = max(render, time.Since(start))
		landing = max(landing, timeGet(t, web.URL+"/"))
	}

	var stop atomic.Bool
	var worst atomic.Int64
	var reads atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			for _, p := range []string{"/metrics", "/"} {
				d := timeGet(t, web.URL+p)
				reads.Add(1)
				if int64(d) > worst.Load() {
					worst.Store(int64(d))
				}
			}
		}
	}()
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	load = manyTargets(6, engine.URL)
	mu.Unlock()
	start := time.Now()
	if err := ex.Reload(current); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	time.Sleep(20 * time.Millisecond)
	stop.Store(true)
	<-done

	bound := 2*(render+landing) + 100*time.Millisecond
	t.Logf("reload 4000 -> 6: %v; render %v, landing %v; worst read %v over %d reads (bound %v)",
		took, render, landing, time.Duration(worst.Load()), reads.Load(), bound)
	if w := time.Duration(worst.Load()); w > bound {
		t.Errorf("a read waited %v during the reload, more than %v (2 × (one render %v + one landing page %v) + 100 ms)", w, bound, render, landing)
	}
	if n := len(ex.sortedTargets()); n != 6 {
		t.Errorf("%d targets after the reload, want 6", n)
	}
	mfs, _ := ex.Gatherer().Gather()
	for _, mf := range mfs {
		if mf.GetName() == "goodput_exporter_target_scrape_errors_total" && len(mf.Metric) != 6*len(collector.ScrapeReasons) {
			t.Errorf("%d error-counter series after the reload, want 6 targets × %d reasons", len(mf.Metric), len(collector.ScrapeReasons))
		}
		if mf.GetName() == "goodput_exporter_series_discontinuities_total" && len(mf.Metric) != 6*len(goodput.DiscontinuityKinds) {
			t.Errorf("%d discontinuity series after the reload, want 6 targets × %d reasons", len(mf.Metric), len(goodput.DiscontinuityKinds))
		}
	}
}
