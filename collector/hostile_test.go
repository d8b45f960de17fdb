package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

func reasonOf(err error) string {
	var se *ScrapeError
	if errors.As(err, &se) {
		return se.Reason
	}
	return ""
}

// Hostile engines: each scrape ends within its timeout (plus a margin for
// a loaded machine) with the reason it is counted under, never a panic.
// A gzip bomb and an endless chunked body stop at the 1 MiB cap (counted
// after decompression); a slow-loris body and a redirect loop on the same
// host are cut off; binary and truncated bodies are parse errors.
func TestHostileEngines(t *testing.T) {
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zero := make([]byte, 1<<20)
	for range 100 { // 100 MiB of zeros compress to about 100 KiB
		zw.Write(zero)
	}
	zw.Close()
	binary := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range binary {
		binary[i] = byte(rng.UintN(256))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/bomb", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb.Bytes())
	})
	mux.HandleFunc("/endless", func(w http.ResponseWriter, r *http.Request) {
		line := []byte("vllm:num_requests_running{model_name=\"a\"} 1\n")
		for r.Context().Err() == nil {
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/slowloris", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("vllm:num_requests_running{model_name=\"a\"} 1\n"))
		for {
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
				w.Write([]byte("#"))
			}
		}
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/binary", func(w http.ResponseWriter, _ *http.Request) { w.Write(binary) })
	mux.HandleFunc("/truncated", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("vllm:num_requests_running{model_name=\"a\"} 1\nvllm:num_requests_waiting{model_name=\"a"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	const timeout = 300 * time.Millisecond
	for _, c := range []struct {
		path   string
		engine snapshot.Engine
		reason string
	}{
		{"/bomb", snapshot.VLLM, ReasonBodyTooLarge},
		{"/endless", snapshot.VLLM, ReasonBodyTooLarge},
		{"/slowloris", snapshot.VLLM, ReasonTimeout},
		{"/loop", snapshot.VLLM, ReasonRedirect},
		{"/binary", snapshot.VLLM, ReasonParse},
		{"/binary", "", ReasonUnknownEngine},
		{"/truncated", snapshot.VLLM, ReasonParse},
	} {
		t.Run(strings.TrimPrefix(c.path, "/")+"/"+c.reason, func(t *testing.T) {
			sc, err := NewScraper(ScraperConfig{Name: "t", URL: srv.URL + c.path, Engine: c.engine, Timeout: timeout, MaxBody: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, _, err = sc.Scrape(context.Background())
			if got := reasonOf(err); got != c.reason {
				t.Errorf("reason %q (%v), want %q", got, err, c.reason)
			}
			if d := time.Since(start); d > timeout+5*time.Second {
				t.Errorf("took %v with a %v timeout", d, timeout)
			}
		})
	}
}
