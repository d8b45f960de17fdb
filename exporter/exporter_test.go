package exporter

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/internal/syncbuf"
)

type harness struct {
	t   *testing.T
	ex  *Exporter
	web *httptest.Server
	log *syncbuf.Buffer
}

func fixture(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile("../collector/testdata/fixtures/" + rel)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func serveBody(t *testing.T, body []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func startExporter(t *testing.T, interval, timeout time.Duration, targets ...config.Target) *harness {
	t.Helper()
	return startExporterWith(t, Options{Interval: interval, Timeout: timeout}, nil, targets...)
}

func startExporterWith(t *testing.T, opts Options, pricing *config.Pricing, targets ...config.Target) *harness {
	t.Helper()
	logs := &syncbuf.Buffer{}
	opts.NoJitter = true
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ex := New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	load := func() (*config.Config, error) {
		cfg, _ := config.Parse(nil)
		cfg.Pricing = pricing
		return cfg, cfg.AddTargets(targets)
	}
	if err := ex.Start(ctx, load); err != nil {
		t.Fatal(err)
	}
	web := newWeb(t, ex.Handler("/metrics", load))
	t.Cleanup(func() {
		cancel()
		ex.Wait()
	})
	return &harness{t: t, ex: ex, web: web, log: logs}
}

func newWeb(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// metrics fetches /metrics over HTTP and parses it.
func (h *harness) metrics() map[string]*dto.MetricFamily {
	h.t.Helper()
	resp, err := http.Get(h.web.URL + "/metrics")
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return mfs
}

// value returns the sample of family name whose labels include want, or -1.
func value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	mf := mfs[name]
	if mf == nil {
		return -1
	}
next:
	for _, m := range mf.Metric {
		got := map[string]string{}
		for _, lp := range m.Label {
			got[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// waitFor polls until cond holds or fails the test after 10 s.
func (h *harness) waitFor(what string, cond func(map[string]*dto.MetricFamily) bool) map[string]*dto.MetricFamily {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mfs := h.metrics()
		if cond(mfs) {
			return mfs
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Every kind of broken target: llm_up 0, its errors counted under the right
// reason, one log line for the change of state however many scrapes fail,
// and the healthy target untouched.
func TestBrokenTargets(t *testing.T) {
	good := serveBody(t, fixture(t, "vllm/v1-kops-conformance-2026-03-qwen2.5-0.5b.prom"))
	elsewhere := serveBody(t, fixture(t, "vllm/v1-kops-conformance-2026-03-qwen2.5-0.5b.prom"))
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	handlers := map[string]http.HandlerFunc{
		"timeout": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-hang:
			}
		},
		"http_status": func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", 500) },
		"parse": func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte("vllm:num_requests_running{model_name=\"m\"} 1\nthis is not an exposition\n"))
		},
		"body_too_large": func(w http.ResponseWriter, _ *http.Request) {
			chunk := bytes.Repeat([]byte("# padding padding padding padding\n"), 1<<15)
			for written := 0; written < 100<<20; written += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		},
		"redirect": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+"/metrics", http.StatusFound)
		},
	}
	for reason, h := range handlers {
		t.Run(reason, func(t *testing.T) {
			bad := httptest.NewServer(h)
			defer bad.Close()
			timeout := 300 * time.Millisecond
			hs := startExporter(t, 300*time.Millisecond, timeout,
				config.Target{Name: "good", URL: good.URL + "/metrics"},
				// A 1 MiB cap: reading the default 32 MiB under the race
				// detector on a busy machine can outlast the timeout.
				config.Target{Name: "bad", URL: bad.URL + "/metrics", Engine: "vllm", MaxBodySize: 1 << 20},
			)
			mfs := hs.waitFor("three failed scrapes", func(m map[string]*dto.MetricFamily) bool {
				return value(m, "goodput_exporter_target_scrape_errors_total", map[string]string{"target": "bad", "reason": reason}) >= 3
			})
			checkBrokenState(t, hs, mfs, reason)
		})
	}
}

// /metrics answers while an engine hangs: the scrape waits for its own
// 5 s timeout, the handler only copies the last render.
func TestMetricsNeverWaitsOnAnEngine(t *testing.T) {
	inFlight := make(chan struct{}, 1)
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case inFlight <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hung.Close()
	defer close(release) // before Close, which waits for the hung request
	hs := startExporter(t, 10*time.Second, 5*time.Second, config.Target{Name: "hung", URL: hung.URL, Engine: "vllm"})
	select {
	case <-inFlight:
	case <-time.After(5 * time.Second):
		t.Fatal("the engine was never scraped")
	}
	start := time.Now()
	hs.metrics()
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("/metrics took %v while a scrape with a 5 s timeout was in flight", took)
	}
}

func checkBrokenState(t *testing.T, hs *harness, mfs map[string]*dto.MetricFamily, reason string) {
	t.Helper()
	if v := value(mfs, "llm_model_info", map[string]string{"target": "bad"}); v != -1 {
		t.Errorf("llm_model_info of a target never scraped = %v, want absent", v)
	}
	if v := value(mfs, "llm_up", map[string]string{"target": "bad"}); v != 0 {
		t.Errorf("llm_up bad = %v", v)
	}
	if v := value(mfs, "llm_up", map[string]string{"target": "good"}); v != 1 {
		t.Errorf("llm_up good = %v", v)
	}
	if v := value(mfs, "llm_requests_running", map[string]string{"target": "good"}); v != 0 {
		t.Errorf("good target's series missing or wrong: %v", v)
	}
	if v := value(mfs, "llm_requests_running", map[string]string{"target": "bad"}); v != -1 {
		t.Errorf("a down target must not export engine series, got %v", v)
	}
	for _, r := range []string{"timeout", "connect", "http_status", "parse", "body_too_large", "redirect"} {
		if v := value(mfs, "goodput_exporter_target_scrape_errors_total", map[string]string{"target": "good", "reason": r}); v != 0 {
			t.Errorf("good target has %v %s errors", v, r)
		}
	}
	logs := hs.log.String()
	if n := strings.Count(logs, `msg="target down" target=bad reason=`+reason); n != 1 {
		t.Errorf("want exactly one 'target down' line for %s, got %d:\n%s", reason, n, logs)
	}
	if strings.Contains(logs, "target=good reason") {
		t.Errorf("good target logged a failure:\n%s", logs)
	}
}

// A target that goes away: down with reason connect, one log line; when it
// comes back: up, one log line.
func TestTargetDisappearsAndReturns(t *testing.T) {
	body := fixture(t, "sglang/sglang-from-source.prom")
	var mu sync.Mutex
	gone := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		g := gone
		mu.Unlock()
		if g {
			// Drop the connection like a dead process would.
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	// A timeout a loaded machine cannot hit by accident: each timeout would
	// be a change of reason, and so a second "down" line.
	hs := startExporter(t, 300*time.Millisecond, 300*time.Millisecond, config.Target{Name: "s", URL: srv.URL})
	hs.waitFor("up", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "s"}) == 1
	})
	mu.Lock()
	gone = true
	mu.Unlock()
	mfs := hs.waitFor("down after several scrapes", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "s"}) == 0 &&
			value(m, "goodput_exporter_target_scrape_errors_total", map[string]string{"target": "s", "reason": "connect"}) >= 3
	})
	// Down, it still says which model it served (the capture's one), for
	// LLMEngineDown to name; its engine series are gone.
	info := map[string]string{"target": "s", "engine": "sglang", "model": "meta-llama/Llama-3.1-8B-Instruct"}
	if v := value(mfs, "llm_model_info", info); v != 1 || len(mfs["llm_model_info"].GetMetric()) != 1 {
		t.Errorf("down: llm_model_info%v = %v (%d series), want 1, one series", info, v, len(mfs["llm_model_info"].GetMetric()))
	}
	if v := value(mfs, "llm_requests_running", map[string]string{"target": "s"}); v != -1 {
		t.Errorf("down: llm_requests_running = %v, want absent", v)
	}
	mu.Lock()
	gone = false
	mu.Unlock()
	hs.waitFor("up again", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "s"}) == 1
	})
	logs := hs.log.String()
	if strings.Count(logs, `msg="target down"`) != 1 || strings.Count(logs, `msg="target up again"`) != 1 {
		t.Errorf("want one down and one up line:\n%s", logs)
	}
}

func TestGzipAndLandingPage(t *testing.T) {
	good := serveBody(t, fixture(t, "llamacpp/server-cuda-2026-lfm2.5-8b.prom"))
	hs := startExporter(t, 50*time.Millisecond, 50*time.Millisecond, config.Target{Name: "llama", URL: good.URL, Model: "lfm"})
	hs.waitFor("up", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "llama"}) == 1
	})
	req, _ := http.NewRequest("GET", hs.web.URL+"/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("gzip not served: %v", resp.Header)
	}
	resp, err = http.Get(hs.web.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"llama", "llamacpp", `class="state up"`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("landing page lacks %q:\n%s", want, page)
		}
	}
}
