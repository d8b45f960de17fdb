package collector

import (
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

func newTestScraper(t *testing.T, url string, engine snapshot.Engine, timeout time.Duration, maxBody int64) *Scraper {
	t.Helper()
	sc, err := NewScraper(ScraperConfig{Name: "t", URL: url, Engine: engine, Timeout: timeout, MaxBody: maxBody})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func wantReason(t *testing.T, err error, reason string) {
	t.Helper()
	var se *ScrapeError
	if !errors.As(err, &se) {
		t.Fatalf("want a ScrapeError with reason %s, got %v", reason, err)
	}
	if se.Reason != reason {
		t.Fatalf("reason %q (%v), want %q", se.Reason, se.Err, reason)
	}
}

func TestScrapeFailures(t *testing.T) {
	body := readFixture(t, snapshot.VLLM, "v1-0.8-production-stack-318-excerpt.prom")
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body) }))
	defer other.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	mux.HandleFunc("/500", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "engine exploded", 500) })
	mux.HandleFunc("/501", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(501) })
	mux.HandleFunc("/garbage", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("<html><body>login</body></html>\n")) })
	mux.HandleFunc("/huge", func(w http.ResponseWriter, _ *http.Request) {
		line := []byte(strings.Repeat("#", 1023) + "\n")
		for i := 0; i < 100<<10; i++ { // 100 MiB, streamed
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/metrics", http.StatusFound)
	})
	mux.HandleFunc("/here", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/metrics", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { w.Write(body) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	gone := httptest.NewServer(mux)
	goneURL := gone.URL
	gone.Close()

	cases := []struct {
		path, url string
		engine    snapshot.Engine
		reason    string
	}{
		{path: "/hang", reason: ReasonTimeout},
		{path: "/500", reason: ReasonHTTPStatus},
		{path: "/501", reason: ReasonHTTPStatus},
		{path: "/garbage", reason: ReasonUnknownEngine},
		{path: "/garbage", engine: snapshot.VLLM, reason: ReasonParse},
		{path: "/huge", reason: ReasonBodyTooLarge},
		{path: "/away", reason: ReasonRedirect},
		{url: goneURL + "/metrics", reason: ReasonConnect},
	}
	for _, c := range cases {
		t.Run(c.path+c.reason, func(t *testing.T) {
			u := c.url
			if u == "" {
				u = srv.URL + c.path
			}
			// A short timeout where the timeout is the point; elsewhere one
			// that a loaded machine cannot hit before the real reason.
			timeout := 10 * time.Second
			if c.reason == ReasonTimeout {
				timeout = 300 * time.Millisecond
			}
			sc := newTestScraper(t, u, c.engine, timeout, 1<<20)
			start := time.Now()
			_, _, err := sc.Scrape(context.Background())
			wantReason(t, err, c.reason)
			if c.reason == ReasonTimeout && time.Since(start) > 5*time.Second {
				t.Errorf("timeout not enforced: %v", time.Since(start))
			}
			if c.path == "/501" && !strings.Contains(err.Error(), "--metrics") {
				t.Errorf("501 should hint at --metrics: %v", err)
			}
			if c.path == "/500" && !strings.Contains(err.Error(), "engine exploded") {
				t.Errorf("status error should quote the body: %v", err)
			}
		})
	}
	t.Run("redirect on the same host is followed", func(t *testing.T) {
		sc := newTestScraper(t, srv.URL+"/here", "", time.Second, 1<<20)
		if _, _, err := sc.Scrape(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestScrapeGzipAndAccept(t *testing.T) {
	body := readFixture(t, snapshot.SGLang, "sglang-from-source.prom")
	var accept, encoding atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept.Store(r.Header.Get("Accept"))
		encoding.Store(r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		gz.Write(body)
		gz.Close()
	}))
	defer srv.Close()
	sc := newTestScraper(t, srv.URL, "", time.Second, 32<<20)
	snap, res, err := sc.Scrape(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes != len(body) || res.Detected != snapshot.SGLang {
		t.Errorf("bytes %d (want %d decompressed), detected %q", res.Bytes, len(body), res.Detected)
	}
	if want := mustParse(t, snapshot.SGLang, string(body), ""); !equalModels(want.Models[0], snap.Models[0]) {
		t.Error("gzip body parsed differently")
	}
	if a := accept.Load().(string); !strings.Contains(a, "text/plain;version=0.0.4") || !strings.Contains(a, "application/openmetrics-text;version=1.0.0") {
		t.Errorf("Accept: %q", a)
	}
	if e := encoding.Load().(string); !strings.Contains(e, "gzip") {
		t.Errorf("Accept-Encoding: %q", e)
	}
}

// A restart needs two witnesses: the third answer's counter falls under
// an unchanged start time (a glitch, not a restart), the fourth's falls
// with a new start time (a restart).
func TestRestartDetected(t *testing.T) {
	var n atomic.Int32
	restartAt := strconv.FormatInt(time.Now().Unix()+3600, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		i := min(int(n.Add(1))-1, 3)
		w.Header().Set("Process-Start-Time-Unix", []string{"1700000000", "1700000000", "1700000000", restartAt}[i])
		tokens := []string{"100", "250", "30", "20"}[i]
		w.Write([]byte("# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total " + tokens + "\n"))
	}))
	defer srv.Close()
	sc := newTestScraper(t, srv.URL, snapshot.LlamaCPP, time.Second, 1<<20) // one sample line: too few to detect
	var restarts, noReset []bool
	for i := range 4 {
		snap, res, err := sc.Scrape(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if i < 3 && snap.ProcessStart != 1700000000 {
			t.Errorf("Process-Start-Time-Unix header not read: %v", snap.ProcessStart)
		}
		if snap.Restarted != (res.Restart != "") {
			t.Errorf("flag and reason disagree: %v %q", snap.Restarted, res.Restart)
		}
		restarts = append(restarts, snap.Restarted)
		noReset = append(noReset, snap.NoReset)
	}
	if restarts[0] || restarts[1] || restarts[2] || !restarts[3] {
		t.Errorf("restarts = %v, want only the fourth (a new start time and 30 -> 20)", restarts)
	}
	if !noReset[1] || !noReset[2] || noReset[3] {
		t.Errorf("no-reset = %v, want it where the start time did not change", noReset)
	}
}

func TestRestartByProcessStart(t *testing.T) {
	a := &snapshot.Snapshot{ProcessStart: 10}
	b := &snapshot.Snapshot{ProcessStart: 20}
	if MarkRestart(a, b) == "" || !b.Restarted {
		t.Error("a new process start time is a restart")
	}
}

// A vLLM target redeployed as SGLang behind the same address is detected
// again, not left reading nothing as vLLM; the new engine's counts are of
// unknown age, so the switch only sets baselines.
func TestEngineChangeIsDetected(t *testing.T) {
	vllm := readFixture(t, snapshot.VLLM, "v1-latest-from-source.prom")
	sglang := readFixture(t, snapshot.SGLang, "sglang-from-source.prom")
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) == 1 {
			w.Write(vllm)
			return
		}
		w.Write(sglang)
	}))
	defer srv.Close()
	sc := newTestScraper(t, srv.URL, "", time.Second, 32<<20)
	if _, res, err := sc.Scrape(context.Background()); err != nil || res.Detected != snapshot.VLLM {
		t.Fatalf("first scrape: %v %+v", err, res)
	}
	snap, res, err := sc.Scrape(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Detected != snapshot.SGLang || snap.Engine != snapshot.SGLang || len(snap.Models) != 1 {
		t.Fatalf("after the switch: detected %q, engine %q, %d models", res.Detected, snap.Engine, len(snap.Models))
	}
	if !snap.Baseline || snap.Restarted || !strings.Contains(res.Baseline, "from vllm to sglang") {
		t.Errorf("baseline %v %q", snap.Baseline, res.Baseline)
	}
	// A configured engine is never second-guessed, and the other engine's
	// body leaves it down, saying so.
	n.Store(0)
	fixed := newTestScraper(t, srv.URL, snapshot.VLLM, time.Second, 32<<20)
	fixed.Scrape(context.Background())
	snap, _, err = fixed.Scrape(context.Background())
	var se *ScrapeError
	if snap != nil || !errors.As(err, &se) || se.Reason != ReasonWrongEngine || fixed.Engine() != snapshot.VLLM || !strings.Contains(err.Error(), "sglang") {
		t.Errorf("a configured vllm target reading sglang's body: %v, engine %q, snapshot %v; want down as wrong_engine naming sglang", err, fixed.Engine(), snap)
	}
}
