package exporter

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/goodput-exporter/goodput-exporter/config"
)

// targetLoops counts the running target goroutines.
func targetLoops() int {
	buf := make([]byte, 1<<22)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "exporter.(*target).loop(")
}

// No goroutine outlives a stopped target or a reload: a reload from 21
// targets (one hanging mid-scrape) to 3 leaves exactly 3 target loops when
// it returns, and stopping the exporter leaves nothing it started, the
// hanging scrape's connection included.
func TestNoGoroutineOutlivesAReload(t *testing.T) {
	before := goleak.IgnoreCurrent()
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("vllm:num_requests_running{model_name=\"m\"} 1\n"))
	}))
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	var mu sync.Mutex
	n := 20
	load := func() (*config.Config, error) {
		mu.Lock()
		defer mu.Unlock()
		cfg, _ := config.Parse(nil)
		ts := []config.Target{{Name: "hang", URL: hang.URL}}
		for i := range n {
			ts = append(ts, config.Target{Name: fmt.Sprintf("t%d", i), URL: engine.URL})
		}
		return cfg, cfg.AddTargets(ts)
	}
	ex := New(Options{Interval: 50 * time.Millisecond, Timeout: 50 * time.Millisecond, NoJitter: true})
	ctx, cancel := context.WithCancel(context.Background())
	if err := ex.Start(ctx, load); err != nil {
		t.Fatal(err)
	}
	// Start returns once the loops are started, not once they run (a
	// runnable goroutine that has not run yet shows no frame).
	for deadline := time.Now().Add(5 * time.Second); targetLoops() != 21 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if got := targetLoops(); got != 21 {
		t.Errorf("%d target loops after start, want 21", got)
	}
	time.Sleep(120 * time.Millisecond) // a few scrapes, one of them hanging
	mu.Lock()
	n = 2
	mu.Unlock()
	if err := ex.Reload(load); err != nil {
		t.Fatal(err)
	}
	if got := targetLoops(); got != 3 {
		t.Errorf("%d target loops right after reloading to 3 targets, want 3", got)
	}
	cancel()
	ex.Wait()
	if got := targetLoops(); got != 0 {
		t.Errorf("%d target loops after Wait, want 0", got)
	}
	close(release)
	engine.Close()
	hang.Close()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	goleak.VerifyNone(t, before)
}
