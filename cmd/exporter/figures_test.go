package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
)

// TestFigures measures the whole daemon's figures of docs/benchmarks.md
// ("Cited figures"): `make figures` runs it (GOODPUT_FIGURES=1) and
// copies the lines it prints that start with "figure " into the table.
// CPU is the daemon's CPU time (user + system, /proc/PID/stat) over the
// period, as a share of one core, never wall time; memory is read from
// /proc/PID/status. It takes about three minutes.
//
//   - One vLLM engine of 100 models (33,200 samples, 4.1 MB), its values
//     moving every scrape (testbody.Advance), collected every 5 s (the
//     default interval) for 60 s while Prometheus reads /metrics every 5 s,
//     then 60 s while it reads every 15 s; VmRSS at the end.
//   - 200 ordinary vLLM engines (the 664-sample capture), as the chart runs
//     the daemon (a 192 MiB limit, so a soft limit of 80 %), every 5 s for
//     30 s after every target is up, /metrics read every 15 s: the peak of
//     anonymous resident memory (RssAnon, sampled every 10 ms), the CPU,
//     and the memory a target adds (RssAnon at the end less an idle
//     daemon's, divided by 200).
func TestFigures(t *testing.T) {
	if os.Getenv("GOODPUT_FIGURES") == "" || testing.Short() {
		t.Skip("run by make figures (GOODPUT_FIGURES=1, about three minutes)")
	}
	medium, err := os.ReadFile(filepath.Join("..", "..", "collector", "testdata", "fixtures", "vllm", "v1-latest-from-source.prom"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOODPUT_EXPORTER_MEMORY_LIMIT", fmt.Sprintf("%dMiB", chartLimitMiB))

	t.Run("one-100-model-engine", func(t *testing.T) {
		var mu sync.Mutex
		cur := testbody.Multiply(medium, "meta-llama/Llama-3.1-8B-Instruct", 100)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			body := cur
			cur = testbody.Advance(cur, 0.002) // counters and histograms grow
			mu.Unlock()
			w.Write(body)
		}))
		t.Cleanup(srv.Close)
		base, pid := startDaemon(t, "--collect.interval=5s", "--collect.timeout=4s", "--config.file=testdata/footprint.yml", "--gpu.backend=none", "--target", "engine-0="+srv.URL)
		waitUp(t, base, 1)
		time.Sleep(6 * time.Second) // one steady scrape after the first
		for _, every := range []int{5, 15} {
			u0, s0 := cpuTimes(t, pid)
			start := time.Now()
			for i := 1; i <= 60; i++ {
				time.Sleep(time.Second)
				if i%every == 0 {
					scrapeMetrics(t, base)
				}
			}
			u1, s1 := cpuTimes(t, pid)
			share := (u1 + s1 - u0 - s0) / time.Since(start).Seconds() * 100
			fmt.Printf("figure cpu-100-models-%ds %.2f\n", every, share)
		}
		fmt.Printf("figure rss-100-models %.1f\n", procStatusMiB(t, pid, "VmRSS"))
	})

	t.Run("200-ordinary-engines", func(t *testing.T) {
		_, idlePID := startDaemon(t, "--collect.interval=5s", "--config.file=testdata/footprint.yml", "--gpu.backend=none")
		time.Sleep(3 * time.Second)
		idle := procStatusMiB(t, idlePID, "RssAnon")
		const n = 200
		args := []string{"--collect.interval=5s", "--collect.timeout=4s", "--config.file=testdata/footprint.yml", "--gpu.backend=none"}
		for i := range n {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(medium) }))
			t.Cleanup(srv.Close)
			args = append(args, "--target", fmt.Sprintf("engine-%03d=%s/metrics", i, srv.URL))
		}
		base, pid := startDaemon(t, args...)
		waitUp(t, base, n)
		time.Sleep(6 * time.Second)
		peak, stop := samplePeak(pid, "RssAnon")
		u0, s0 := cpuTimes(t, pid)
		start := time.Now()
		for i := 1; i <= 30; i++ {
			time.Sleep(time.Second)
			if i%15 == 0 {
				scrapeMetrics(t, base)
			}
		}
		u1, s1 := cpuTimes(t, pid)
		stop()
		share := (u1 + s1 - u0 - s0) / time.Since(start).Seconds() * 100
		end := procStatusMiB(t, pid, "RssAnon")
		fmt.Printf("figure fleet-200-anon %.1f\n", float64(peak.Load())/1024)
		fmt.Printf("figure fleet-200-cpu %.2f\n", share)
		fmt.Printf("figure memory-per-target %.2f\n", (end-idle)/n)
		fmt.Printf("figure idle-anon %.1f\n", idle)
	})
}

// waitUp waits for n targets to be up.
func waitUp(t *testing.T, base string, n int) {
	t.Helper()
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(time.Second) {
		body := getTB(t, base+"/metrics")
		if len(upLine.FindAllString(body, -1)) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d targets up:\n%.2000s", n, body)
		}
	}
}

// scrapeMetrics reads /metrics as Prometheus does (gzip).
func scrapeMetrics(t *testing.T, base string) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// samplePeak samples a /proc/PID/status field every 10 ms until stop is
// called; the peak is in KiB.
func samplePeak(pid int, key string) (*atomic.Uint64, func()) {
	var peak atomic.Uint64
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			if kb, ok := statusKiB(pid, key); ok && kb > peak.Load() {
				peak.Store(kb)
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return &peak, func() { close(done); <-stopped }
}
