package sim

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func get(t *testing.T, url string) (string, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b), resp.Header.Get("Content-Type")
}

func TestServerMapsWallTimeToVirtualTime(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	cfg := DefaultConfig()
	cfg.StartUnix = 0
	s, err := NewServer(cfg, ServerOptions{Speed: 10, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.Handler(FormatVLLM))
	mux.Handle("/gpu", s.GPUHandler())
	srv := httptest.NewServer(mux)
	defer srv.Close()

	body, ctype := get(t, srv.URL+"/metrics")
	fams := parseText(t, body)
	if ctype != ContentType || value(t, fams, "vllm:generation_tokens_total") != 0 {
		t.Fatalf("at start: content type %q, tokens %v", ctype, value(t, fams, "vllm:generation_tokens_total"))
	}
	if got := value(t, fams, "process_start_time_seconds"); got != 1_800_000_000 {
		t.Errorf("process start %v, want the clock's start", got)
	}
	clock.Add(3 * time.Second)
	if now := s.Now(); now != 30*time.Second {
		t.Fatalf("3s of wall time at speed 10 is %v virtual", now)
	}
	fams = parseText(t, first(get(t, srv.URL+"/metrics")))
	if value(t, fams, "vllm:generation_tokens_total") == 0 {
		t.Fatal("no tokens after 30 virtual seconds")
	}
	if gpu := parseText(t, first(get(t, srv.URL+"/gpu"))); value(t, gpu, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") == 0 {
		t.Fatal("no energy after 30 virtual seconds")
	}
	if rep := s.Evaluate(0, s.Now(), Thresholds{TTFT: time.Second}); rep.Requests == 0 {
		t.Fatal("no ground truth")
	}
	s.SetLever(EngineStall)
	if s.Lever() != EngineStall {
		t.Fatalf("lever %s after SetLever", s.Lever())
	}
}

func first(a, _ string) string { return a }

// Scrapes, lever changes and the run loop share the engine safely.
func TestServerConcurrentUse(t *testing.T) {
	s, err := NewServer(DefaultConfig(), ServerOptions{Speed: 50, Tick: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var wg sync.WaitGroup
	for i, h := range []http.Handler{s.Handler(FormatVLLM), s.Handler(FormatSGLang), s.Handler(FormatLlamaCPP), s.GPUHandler()} {
		wg.Go(func() {
			for range 20 {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
					t.Errorf("handler %d: status %d", i, rec.Code)
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	wg.Go(func() {
		for _, l := range []Lever{QueueGrowth, EngineStall, Healthy} {
			s.SetLever(l)
			time.Sleep(10 * time.Millisecond)
		}
	})
	wg.Wait()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v after cancel", err)
	}
	if s.Now() == 0 {
		t.Fatal("virtual time did not move")
	}
}
