package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
)

// chartLimitMiB is the Helm chart's memory limit (values.yaml
// resources.limits.memory).
const chartLimitMiB = 192

// TestFleetMemoryUnderTheChartLimit runs the built daemon as the chart
// runs it (GOODPUT_EXPORTER_MEMORY_LIMIT=192MiB, so a soft limit of 80 %)
// against 200 targets on loopback: 163 ordinary vLLM engines, 7 serving
// 100 MB bodies (chunked, so each is read to its 32 MiB cap), and 30
// hostile ones (testbody.Hostile, its 14 kinds about twice each), scraped every
// 5 s (the chart's interval) for 30 s once all ordinary engines are up,
// while /metrics is read every 15 s. Its peak anonymous resident memory
// (RssAnon, sampled every 10 ms: the heap, stacks and runtime, what the
// container's limit cannot reclaim) must stay under the chart's limit,
// and every ordinary engine must be up at the end. VmHWM, logged beside
// it, adds the binary's file-backed pages (about 28 MiB of its 41 MiB
// resident), page cache the kernel reclaims under the limit before it
// kills anything.
//
// It takes about a minute and loads the machine, so it runs only with
// GOODPUT_FLEET_MEMORY=1. GOODPUT_FLEET_OTLP=1 adds an OTLP/HTTP sender
// holding 100 concurrent 4 MiB requests open for 5 s (what the OTLP
// receiver's in-flight limit is for). GOODPUT_FLEET_SOFT_LIMIT=off runs
// the daemon without a soft memory limit, for comparison.
func TestFleetMemoryUnderTheChartLimit(t *testing.T) {
	if os.Getenv("GOODPUT_FLEET_MEMORY") == "" || testing.Short() {
		t.Skip("set GOODPUT_FLEET_MEMORY=1 to run (about 40 s, heavy)")
	}
	fixture := "llamacpp/server-cuda-2026-lfm2.5-8b.prom"
	if f := os.Getenv("GOODPUT_FLEET_ORDINARY"); f != "" {
		fixture = f
	}
	medium, err := os.ReadFile(filepath.Join("..", "..", "collector", "testdata", "fixtures", fixture))
	if err != nil {
		t.Fatal(err)
	}
	const ordinary = 163
	big, hostileN := 7, 30
	if os.Getenv("GOODPUT_FLEET_QUIET") != "" {
		big, hostileN = 0, 0 // the ordinary engines alone: the baseline
	}
	// The chart's interval (5 s) and the default timeout (4 s).
	args := []string{"--collect.interval=5s", "--collect.timeout=4s", "--config.file=testdata/footprint.yml", "--gpu.backend=none"}
	serve := func(name string, h http.Handler) {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		args = append(args, "--target", name+"="+srv.URL+"/metrics")
	}
	for i := range ordinary {
		serve(fmt.Sprintf("engine-%03d", i), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(medium) }))
	}
	chunk := bytes.Repeat([]byte(`vllm:generation_tokens_total{model_name="m"} 1`+"\n"), 1<<14)
	for i := range big {
		serve(fmt.Sprintf("big-%d", i), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for written := 0; written < 100e6 && r.Context().Err() == nil; written += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}))
	}
	hostile := testbody.Hostile()
	if only := os.Getenv("GOODPUT_FLEET_HOSTILE"); only != "" {
		for name := range hostile { // some kinds only, to see what each costs
			if !slices.Contains(strings.Split(only, ","), name) {
				delete(hostile, name)
			}
		}
	}
	n := 0
	for n < hostileN {
		for name, h := range hostile {
			if n < hostileN {
				serve(fmt.Sprintf("hostile-%s-%d", name, n), h)
				n++
			}
		}
	}
	otlp := os.Getenv("GOODPUT_FLEET_OTLP") != ""
	var otlpAddr string
	if otlp {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		otlpAddr = l.Addr().String()
		l.Close()
		args = append(args, "--otlp.http.listen-address="+otlpAddr)
	}
	t.Setenv("GOMEMLIMIT", "")
	if os.Getenv("GOODPUT_FLEET_SOFT_LIMIT") != "off" {
		t.Setenv("GOODPUT_EXPORTER_MEMORY_LIMIT", fmt.Sprintf("%dMiB", chartLimitMiB))
	} else {
		t.Setenv("GOODPUT_EXPORTER_MEMORY_LIMIT", "")
	}
	base, pid := startDaemon(t, args...)

	up := func() int { return len(ordinaryUp.FindAllString(getTB(t, base+"/metrics"), -1)) }
	for deadline := time.Now().Add(60 * time.Second); up() < ordinary; time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of the %d ordinary engines up; their errors:\n%s", up(), ordinary, ordinaryErrors(getTB(t, base+"/metrics")))
		}
	}
	var peakAnon atomic.Uint64 // KiB
	sampled := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if kb, ok := statusKiB(pid, "RssAnon"); ok && kb > peakAnon.Load() {
				peakAnon.Store(kb)
			}
		}
	}()
	var wg sync.WaitGroup
	if otlp {
		for range 100 {
			wg.Go(func() { holdOTLPRequest(t, "http://"+otlpAddr+"/v1/traces", 4<<20, 5*time.Second) })
		}
	}
	for i := range 30 {
		time.Sleep(time.Second)
		if i%15 == 14 { // Prometheus' 15 s
			resp, err := http.Get(base + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	wg.Wait()
	if got := up(); got < ordinary {
		t.Errorf("%d of the %d ordinary engines up at the end; their errors:\n%s", got, ordinary, ordinaryErrors(getTB(t, base+"/metrics")))
	}
	close(stop)
	<-sampled
	peak, rss := procStatusMiB(t, pid, "VmHWM"), procStatusMiB(t, pid, "VmRSS")
	anon := float64(peakAnon.Load()) / 1024
	t.Logf("%d ordinary targets (%s), %d with 100 MB bodies, %d hostile, OTLP sender %v: peak anonymous RSS %.1f MiB, peak RSS %.1f MiB (with the binary's file-backed pages), RSS at the end %.1f MiB", ordinary, fixture, big, hostileN, otlp, anon, peak, rss)
	if anon == 0 {
		t.Fatal("RssAnon never read")
	}
	if anon >= chartLimitMiB {
		t.Errorf("peak anonymous RSS %.1f MiB, over the chart's %d MiB limit", anon, chartLimitMiB)
	}
}

var (
	ordinaryUp     = regexp.MustCompile(`(?m)^llm_up\{.*target="engine-\d+".*\} 1$`)
	ordinaryErrors = func(exposition string) string {
		var out []string
		for _, l := range strings.Split(exposition, "\n") {
			if strings.HasPrefix(l, "goodput_exporter_target_scrape_errors_total{") && strings.Contains(l, `target="engine-`) && !strings.HasSuffix(l, " 0") {
				out = append(out, l)
			}
		}
		if len(out) > 20 {
			out = append(out[:20], fmt.Sprintf("… %d more", len(out)-20))
		}
		return strings.Join(out, "\n")
	}
)

// statusKiB reads one "kB" field of /proc/pid/status.
func statusKiB(pid int, key string) (uint64, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb, err == nil
		}
	}
	return 0, false
}

// holdOTLPRequest sends an OTLP/HTTP request of size bytes, all but the
// last byte at once, then holds it open for hold before the last byte.
func holdOTLPRequest(t *testing.T, url string, size int, hold time.Duration) {
	pr, pw := io.Pipe()
	go func() {
		pw.Write(make([]byte, size-1))
		time.Sleep(hold)
		pw.Write([]byte{0})
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, url, pr)
	req.ContentLength = int64(size)
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if !strings.Contains(err.Error(), "connection reset") {
			t.Logf("OTLP request: %v", err)
		}
		pr.CloseWithError(err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// TestHostileFleetUnderTheChartLimit runs the built daemon as the chart
// runs it against 200 targets on loopback, 170 ordinary engines (the
// llama.cpp capture of TestFleetMemoryUnderTheChartLimit, or
// GOODPUT_FLEET_ORDINARY) and 30 hostile ones of one kind, each kind in turn:
// 100 MB bodies, 10,000 models in one body, 50,000 bucket bounds new
// every scrape, 8 KiB label values new every scrape, 500 labels a line
// (testbody.Hostile's huge, models, bounds, longvalues, labels). Every
// target is scraped every 5 s for 30 s once the ordinary ones are up,
// while /metrics is read every 5 s. The peak anonymous resident memory
// (RssAnon, sampled every 10 ms) must stay under the chart's limit, every
// read of /metrics must answer within 10 s (Prometheus' default scrape
// timeout), and every ordinary engine must be up at the end. It logs one
// line of figures per kind (docs/reliability.md, "Memory budget").
//
// About four minutes: it runs only with GOODPUT_FLEET_MEMORY=1;
// GOODPUT_FLEET_HOSTILE=kind,… runs some kinds only;
// GOODPUT_FLEET_HEAP_PROFILE=dir runs the daemon with --web.enable-pprof
// and writes its heap profile at the end of each kind to dir/kind.heap
// (go tool pprof -sample_index=inuse_space), to see where the memory goes.
func TestHostileFleetUnderTheChartLimit(t *testing.T) {
	if os.Getenv("GOODPUT_FLEET_MEMORY") == "" || testing.Short() {
		t.Skip("set GOODPUT_FLEET_MEMORY=1 to run (about four minutes, heavy)")
	}
	fixture := "llamacpp/server-cuda-2026-lfm2.5-8b.prom"
	if f := os.Getenv("GOODPUT_FLEET_ORDINARY"); f != "" {
		fixture = f
	}
	medium, err := os.ReadFile(filepath.Join("..", "..", "collector", "testdata", "fixtures", fixture))
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{"huge", "models", "bounds", "longvalues", "labels"}
	if only := os.Getenv("GOODPUT_FLEET_HOSTILE"); only != "" {
		kinds = strings.Split(only, ",")
	}
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOODPUT_EXPORTER_MEMORY_LIMIT", fmt.Sprintf("%dMiB", chartLimitMiB))
	const ordinary, hostileN = 170, 30
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			h := testbody.Hostile()[kind]
			if h == nil {
				t.Fatalf("no hostile kind %q", kind)
			}
			args := []string{"--collect.interval=5s", "--collect.timeout=4s", "--config.file=testdata/footprint.yml", "--gpu.backend=none"}
			profiles := os.Getenv("GOODPUT_FLEET_HEAP_PROFILE")
			if profiles != "" {
				args = append(args, "--web.enable-pprof")
			}
			serve := func(name string, h http.Handler) {
				srv := httptest.NewServer(h)
				t.Cleanup(srv.Close)
				args = append(args, "--target", name+"="+srv.URL+"/metrics")
			}
			for i := range ordinary {
				serve(fmt.Sprintf("engine-%03d", i), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(medium) }))
			}
			for i := range hostileN {
				serve(fmt.Sprintf("hostile-%s-%d", kind, i), h)
			}
			base, pid := startDaemon(t, args...)
			up := func() int { return len(ordinaryUp.FindAllString(getTB(t, base+"/metrics"), -1)) }
			for deadline := time.Now().Add(90 * time.Second); up() < ordinary; time.Sleep(time.Second) {
				if time.Now().After(deadline) {
					t.Fatalf("only %d of the %d ordinary engines up; their errors:\n%s", up(), ordinary, ordinaryErrors(getTB(t, base+"/metrics")))
				}
			}
			peak, stop := samplePeak(pid, "RssAnon")
			client := &http.Client{Timeout: 10 * time.Second}
			var slowest time.Duration
			u0, s0 := cpuTimes(t, pid)
			start := time.Now()
			for i := 1; i <= 30; i++ {
				time.Sleep(time.Second)
				if i%5 != 0 {
					continue
				}
				t0 := time.Now()
				resp, err := client.Get(base + "/metrics")
				if err != nil {
					t.Errorf("/metrics at %d s: %v", i, err)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				slowest = max(slowest, time.Since(t0))
			}
			u1, s1 := cpuTimes(t, pid)
			share := (u1 + s1 - u0 - s0) / time.Since(start).Seconds() * 100
			if got := up(); got < ordinary {
				t.Errorf("%d of the %d ordinary engines up at the end; their errors:\n%s", got, ordinary, ordinaryErrors(getTB(t, base+"/metrics")))
			}
			stop()
			if profiles != "" {
				resp, err := client.Get(base + "/debug/pprof/heap")
				if err != nil {
					t.Fatal(err)
				}
				heap, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("heap profile: %v %s", err, resp.Status)
				}
				if err := os.WriteFile(filepath.Join(profiles, kind+".heap"), heap, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			anon := float64(peak.Load()) / 1024
			t.Logf("figures: %d ordinary (%s) + %d %s: peak anonymous RSS %.1f MiB, VmHWM %.1f MiB, CPU %.1f %% of a core, slowest /metrics %v",
				ordinary, fixture, hostileN, kind, anon, procStatusMiB(t, pid, "VmHWM"), share, slowest.Round(time.Millisecond))
			if anon == 0 {
				t.Fatal("RssAnon never read")
			}
			if anon >= chartLimitMiB {
				t.Errorf("peak anonymous RSS %.1f MiB, over the chart's %d MiB limit", anon, chartLimitMiB)
			}
		})
	}
}
