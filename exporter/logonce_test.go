package exporter

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/internal/syncbuf"
)

// Several models with a broken family each: one "family left out" line
// per model over many scrapes, whatever order the parser meets the models
// in. Before the keys were sorted the errors came in map order, and each
// scrape that changed the order logged them all again.
func TestTwoErroringModelsLogOnce(t *testing.T) {
	models := []string{"a", "b", "c", "d", "e"}
	body := "# TYPE vllm:num_requests_running gauge\n"
	for _, m := range models {
		body += "vllm:num_requests_running{model_name=\"" + m + "\"} NaN\n"
	}
	body += "# TYPE vllm:num_requests_waiting gauge\n"
	for _, m := range models {
		body += "vllm:num_requests_waiting{model_name=\"" + m + "\"} 1\n"
	}
	var mu sync.Mutex
	scrapes := 0
	srv := serveCounting(t, []byte(body), &mu, &scrapes)
	hs := startExporter(t, 20*time.Millisecond, 20*time.Millisecond, config.Target{Name: "s", URL: srv.URL, Engine: "vllm"})
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := scrapes
		mu.Unlock()
		if n >= 21 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d scrapes", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	logs := hs.log.String()
	if n := strings.Count(logs, `msg="family left out"`); n != len(models) {
		t.Errorf("%d family lines over 20+ scrapes, want %d (one per model):\n%s", n, len(models), logs)
	}
	for _, m := range models {
		if !strings.Contains(logs, `(model \"`+m+`\")`) {
			t.Errorf("log does not name model %s:\n%s", m, logs)
		}
	}
}

func serveCounting(t *testing.T, body []byte, mu *sync.Mutex, n *int) *httptest.Server {
	return newWeb(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		*n++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	}))
}

// Reloads log only what changed: reloading the same SLOs again and again
// logs the bucket advice once; a new threshold logs the new advice once.
func TestReloadLogsOnlyWhatChanged(t *testing.T) {
	a := serveBody(t, fixture(t, "vllm/v1-latest-from-source.prom"))
	var mu sync.Mutex
	// 300 ms is not a TTFT bucket bound of vLLM (…0.25, 0.5…): advice.
	threshold := "300ms"
	load := func() (*config.Config, error) {
		mu.Lock()
		defer mu.Unlock()
		return config.Parse([]byte(fmt.Sprintf(`
targets:
  - name: a
    url: %s
slos:
  - name: chat
    objectives:
      ttft: { threshold: %s, target: 0.99 }
`, a.URL, threshold)))
	}
	logs := &syncbuf.Buffer{}
	ex := New(Options{Interval: 20 * time.Millisecond, Timeout: 20 * time.Millisecond, NoJitter: true,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); ex.Wait() }()
	if err := ex.Start(ctx, load); err != nil {
		t.Fatal(err)
	}
	hs := &harness{t: t, ex: ex, web: newWeb(t, ex.Handler("/metrics", load)), log: logs}
	advice := func() int { return strings.Count(logs.String(), "these engine flags make it exact") }
	waitLogs := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s:\n%s", what, logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitLogs("bucket advice", func() bool { return advice() >= 1 })
	for range 5 {
		if err := ex.Reload(load); err != nil {
			t.Fatal(err)
		}
		hs.waitFor("a scrape after the reload", func(m map[string]*dto.MetricFamily) bool {
			return value(m, "llm_up", map[string]string{"target": "a"}) == 1
		})
		time.Sleep(60 * time.Millisecond) // three scrapes
	}
	if n := advice(); n != 1 {
		t.Errorf("bucket advice logged %d times over 5 unchanged reloads, want 1", n)
	}
	mu.Lock()
	threshold = "350ms"
	mu.Unlock()
	if err := ex.Reload(load); err != nil {
		t.Fatal(err)
	}
	waitLogs("the new advice", func() bool { return advice() >= 2 })
	time.Sleep(60 * time.Millisecond)
	if n := advice(); n != 2 {
		t.Errorf("bucket advice logged %d times after one changed threshold, want 2", n)
	}
	if !strings.Contains(logs.String(), "0.35") {
		t.Errorf("the new advice does not name 0.35:\n%s", logs.String())
	}
}

// goodput_exporter_target_body_bytes follows the body to 0 when the engine
// starts answering with an empty one, and is not touched by a failed fetch.
func TestBodyBytesEmptyBody(t *testing.T) {
	full := fixture(t, "vllm/v1-kops-conformance-2026-03-qwen2.5-0.5b.prom")
	var mu sync.Mutex
	body, status := full, http.StatusOK
	srv := newWeb(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(status)
		w.Write(body)
	}))
	hs := startExporter(t, 20*time.Millisecond, 20*time.Millisecond, config.Target{Name: "s", URL: srv.URL, Engine: "vllm"})
	bytesOf := func(m map[string]*dto.MetricFamily) float64 {
		return value(m, "goodput_exporter_target_body_bytes", map[string]string{"target": "s"})
	}
	hs.waitFor("the full body's size", func(m map[string]*dto.MetricFamily) bool { return bytesOf(m) == float64(len(full)) })
	mu.Lock()
	body = nil
	mu.Unlock()
	hs.waitFor("an empty body's size, 0", func(m map[string]*dto.MetricFamily) bool { return bytesOf(m) == 0 })
	mu.Lock()
	body, status = []byte("x"), http.StatusInternalServerError
	mu.Unlock()
	mfs := hs.waitFor("an HTTP error", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "goodput_exporter_target_scrape_errors_total", map[string]string{"target": "s", "reason": "http_status"}) >= 2
	})
	if got := bytesOf(mfs); got != 0 {
		t.Errorf("body bytes after failed fetches = %v, want the last body's 0", got)
	}
}
