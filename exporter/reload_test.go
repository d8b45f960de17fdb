package exporter

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/internal/syncbuf"
)

// POST /-/reload applies a new target set, keeps unchanged targets running,
// and on a bad configuration keeps everything as it was.
func TestReload(t *testing.T) {
	a := serveBody(t, fixture(t, "vllm/v1-latest-from-source.prom"))
	b := serveBody(t, fixture(t, "sglang/sglang-from-source.prom"))
	var mu sync.Mutex
	next := []config.Target{{Name: "a", URL: a.URL}}
	var failNext error
	load := func() (*config.Config, error) {
		mu.Lock()
		defer mu.Unlock()
		if failNext != nil {
			return nil, failNext
		}
		cfg, _ := config.Parse(nil)
		return cfg, cfg.AddTargets(next)
	}
	ex := New(Options{Interval: 50 * time.Millisecond, Timeout: 50 * time.Millisecond, NoJitter: true, EnableLifecycle: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); ex.Wait() }()
	if err := ex.Start(ctx, load); err != nil {
		t.Fatal(err)
	}
	hs := &harness{t: t, ex: ex, log: &syncbuf.Buffer{}}
	hs.web = newWeb(t, ex.Handler("/metrics", load))
	hs.waitFor("a up", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "a"}) == 1
	})
	ta := ex.targets["a"]

	mu.Lock()
	next = append(next, config.Target{Name: "b", URL: b.URL})
	mu.Unlock()
	post(t, hs.web.URL+"/-/reload", http.StatusOK)
	hs.waitFor("b up", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "b"}) == 1 &&
			value(m, "goodput_exporter_config_last_reload_successful", nil) == 1
	})
	if ex.targets["a"] != ta {
		t.Error("an unchanged target was restarted by a reload")
	}

	// A change of timeout rebuilds the target but keeps its goodput state.
	tracker := ex.targets["b"].tracker
	mu.Lock()
	next[1].Timeout = config.Duration(40 * time.Millisecond)
	mu.Unlock()
	post(t, hs.web.URL+"/-/reload", http.StatusOK)
	if tb := ex.targets["b"]; tb.tracker != tracker || tb.timeout != 40*time.Millisecond {
		t.Error("a target rebuilt for a new timeout must keep its goodput tracker")
	}
	// A new URL is another engine: fresh state.
	mu.Lock()
	next[1].URL = a.URL
	mu.Unlock()
	post(t, hs.web.URL+"/-/reload", http.StatusOK)
	if ex.targets["b"].tracker == tracker {
		t.Error("a target pointed at another engine must start a fresh tracker")
	}
	hs.waitFor("b up on its new engine", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "b", "engine": "vllm"}) == 1
	})

	mu.Lock()
	failNext = errors.New("line 3: broken")
	mu.Unlock()
	running := map[string]*target{"a": ex.targets["a"], "b": ex.targets["b"]}
	body := post(t, hs.web.URL+"/-/reload", http.StatusBadRequest)
	if !strings.Contains(body, "line 3: broken") {
		t.Errorf("reload error not shown: %q", body)
	}
	mfs := hs.metrics()
	if value(mfs, "goodput_exporter_config_last_reload_successful", nil) != 0 {
		t.Error("failed reload not reflected in the gauge")
	}
	// The same targets keep running and exporting (whether their last
	// 50 ms scrape made it on a loaded machine is not the point here).
	for name, tg := range running {
		if ex.targets[name] != tg || value(mfs, "llm_up", map[string]string{"target": name}) == -1 {
			t.Errorf("a failed reload must keep the running target %s", name)
		}
	}

	mu.Lock()
	failNext, next = nil, next[1:]
	mu.Unlock()
	post(t, hs.web.URL+"/-/reload", http.StatusOK)
	mfs = hs.metrics()
	if value(mfs, "llm_up", map[string]string{"target": "a"}) != -1 ||
		value(mfs, "goodput_exporter_target_scrape_duration_seconds", map[string]string{"target": "a"}) != -1 {
		t.Error("a removed target's series must go")
	}
	resp, err := http.Get(hs.web.URL + "/-/reload")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // an unread, unclosed body keeps its connection's goroutines
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /-/reload: %d", resp.StatusCode)
	}
}

func post(t *testing.T, url string, want int) string {
	t.Helper()
	resp, err := http.Post(url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	sb.Write(buf[:n])
	if resp.StatusCode != want {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, sb.String())
	}
	return sb.String()
}

// A refused reload says every problem of the file, not the first.
func TestRefusedReloadListsEveryError(t *testing.T) {
	var log strings.Builder
	ex := New(Options{Interval: time.Second, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	err := ex.Reload(func() (*config.Config, error) { return config.Load("../config/testdata/invalid-many.yml") })
	if err == nil {
		t.Fatal("an invalid file was applied")
	}
	// The seven problems of invalid-many.yml, lines 2 to 15.
	for _, line := range []string{"line 2:", "line 6:", "line 7:", "line 10:", "line 13:", "line 14:", "line 15:"} {
		if !strings.Contains(err.Error(), line) || !strings.Contains(log.String(), line) {
			t.Errorf("%q missing from the error or the log:\n%v\n%s", line, err, log.String())
		}
	}
}

// Without EnableLifecycle (--web.enable-lifecycle) /-/reload is refused
// with Prometheus' 403 and never loads the file; with it, a cross-site
// browser request is still refused, and only POST and PUT reload.
func TestReloadEndpointNeedsLifecycle(t *testing.T) {
	var loads atomic.Int32
	load := func() (*config.Config, error) {
		loads.Add(1)
		cfg, _ := config.Parse(nil)
		return cfg, nil
	}
	for _, enabled := range []bool{false, true} {
		ex := New(Options{Interval: time.Second, Timeout: time.Second, NoJitter: true, EnableLifecycle: enabled})
		ctx, cancel := context.WithCancel(context.Background())
		if err := ex.Start(ctx, load); err != nil {
			t.Fatal(err)
		}
		web := newWeb(t, ex.Handler("/metrics", load))
		loads.Store(0)
		do := func(method string, header map[string]string) (int, string) {
			req, _ := http.NewRequest(method, web.URL+"/-/reload", strings.NewReader("x"))
			req.Header.Set("Content-Type", "text/plain")
			for k, v := range header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		if !enabled {
			for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodGet} {
				code, body := do(m, nil)
				if code != http.StatusForbidden || !strings.Contains(body, "Lifecycle API is not enabled.") {
					t.Errorf("lifecycle off, %s /-/reload: %d %q, want 403 Lifecycle API is not enabled.", m, code, body)
				}
			}
			if n := loads.Load(); n != 0 {
				t.Errorf("lifecycle off: the configuration was loaded %d times", n)
			}
		} else {
			// What a page elsewhere gets a browser to send: Origin alone is
			// what a browser sends to a plain-HTTP, non-localhost address.
			otherPort := strings.Replace(web.URL, web.Listener.Addr().String(), "127.0.0.1:1", 1)
			for _, h := range []map[string]string{
				{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
				{"Origin": "https://evil.example"},
				{"Origin": "http://evil.example"},
				{"Referer": "http://evil.example/page.html"},
				{"Origin": "null"},
				{"Origin": otherPort},
				{"Sec-Fetch-Site": "same-origin", "Origin": "http://evil.example"},
				{"Sec-Fetch-Site": "cross-site"},
				{"Sec-Fetch-Site": "same-site", "Origin": web.URL},
				{"Origin": web.URL, "Referer": "http://evil.example/"},
			} {
				if code, body := do(http.MethodPost, h); code != http.StatusForbidden || !strings.Contains(body, "cross-site reload refused") {
					t.Errorf("cross-site POST %v: %d %q, want 403", h, code, body)
				}
			}
			if code, _ := do(http.MethodGet, nil); code != http.StatusMethodNotAllowed {
				t.Errorf("GET: %d, want 405", code)
			}
			if n := loads.Load(); n != 0 {
				t.Errorf("refused requests loaded the configuration %d times", n)
			}
			for _, m := range []string{http.MethodPost, http.MethodPut} {
				if code, body := do(m, nil); code != http.StatusOK {
					t.Errorf("lifecycle on, %s: %d %q", m, code, body)
				}
			}
			// The daemon's own page, and a browser's same-origin request.
			for _, h := range []map[string]string{
				{"Origin": web.URL},
				{"Referer": web.URL + "/"},
				{"Origin": strings.ToUpper(web.URL), "Referer": web.URL + "/?x=1", "Sec-Fetch-Site": "same-origin"},
			} {
				if code, body := do(http.MethodPost, h); code != http.StatusOK {
					t.Errorf("same-origin POST %v: %d %q, want 200", h, code, body)
				}
			}
			if n := loads.Load(); n != 5 {
				t.Errorf("POST and PUT loaded the configuration %d times, want 5", n)
			}
		}
		cancel()
		ex.Wait()
	}
}

// The host comparison behind the reload's refusal: default ports, case,
// IPv6 brackets, and what is never an origin.
func TestSameHost(t *testing.T) {
	for _, c := range []struct {
		v, host string
		want    bool
	}{
		{"http://node-1:9400", "node-1:9400", true},
		{"http://NODE-1:9400", "node-1:9400", true},
		{"http://node-1", "node-1:80", true},
		{"https://node-1", "node-1:443", true},
		{"https://node-1", "node-1", true},
		{"http://[::1]:9400", "[::1]:9400", true},
		{"http://node-1:9400/x?y", "node-1:9400", true},
		{"http://node-1:9401", "node-1:9400", false},
		{"http://node-1", "node-1:9400", false},
		{"http://node-10:9400", "node-1:9400", false},
		{"null", "node-1:9400", false},
		{"file:///etc/passwd", "node-1:9400", false},
		{"node-1:9400", "node-1:9400", false},
		{"", "node-1:9400", false},
	} {
		r := &http.Request{Host: c.host}
		if got := sameHost(c.v, r); got != c.want {
			t.Errorf("sameHost(%q, Host %q) = %v, want %v", c.v, c.host, got, c.want)
		}
	}
}
