package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
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

// Each hostile body of testbody.Hostile that a parser reads whole (the
// others are cut by the fetch: bombs, endless and huge bodies, hangs)
// leaves a parse state within its budget, and no more on the heap than
// the state counts (plus the models' accumulators, under 1 MiB): 10,000
// models (the old parser kept a slot and the text of every series of
// the 9,900 past the model limit, about 135 MiB a target in a hostile
// campaign), 2,000 series of 500 labels, 2,000 series of 8 KiB label
// values new every scrape, 50,000 bucket bounds new every scrape.
func TestHostileBodiesStayWithinTheStateBudget(t *testing.T) {
	hostile := testbody.Hostile()
	for _, kind := range []string{"models", "labels", "longvalues", "bounds"} {
		t.Run(kind, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			p, _ := NewParser(snapshot.VLLM, ParseOptions{ModelLimit: 100})
			var snap *snapshot.Snapshot
			size := 0
			for i := range 4 {
				rec := httptest.NewRecorder()
				hostile[kind].ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				body := rec.Body.Bytes()
				size = len(body)
				var err error
				if snap, err = p.Parse(body, "", time.Unix(int64(i), 0)); err != nil {
					t.Fatal(err)
				}
				if p.stateBytes() > DefaultStateBudget {
					t.Fatalf("parse %d: state %d bytes, over the budget %d", i, p.stateBytes(), DefaultStateBudget)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			t.Logf("%s: %d-byte body, state %d bytes (%d series remembered), live heap +%d bytes", kind, size, p.stateBytes(), len(p.canon), grown)
			if grown > int64(p.stateBytes())+1<<20 {
				t.Errorf("live heap grew by %d bytes, past the state's %d and 1 MiB", grown, p.stateBytes())
			}
			if kind == "models" {
				if len(snap.Models) != 100 || len(p.canon) > 100*5 {
					t.Errorf("%d models read, %d series remembered: want the first 100 models' 500", len(snap.Models), len(p.canon))
				}
				if e := snap.Errors; len(e) == 0 || !strings.Contains(e[len(e)-1].Error(), "49500 series left out: more than 100 models") {
					t.Errorf("errors %v", e)
				}
			}
			runtime.KeepAlive(p)
		})
	}
}

// Series of models past the model limit are found without the lexer
// (overLine) and counted as textparse would count them: the same
// snapshots and errors with and without the fast path, body after body,
// and nothing remembered for them. Lines it must leave to textparse (an
// escaped value, labels with a space, a value that is not a number, a
// repeated line) are among them.
func TestModelsPastTheLimitAreCountedNotKept(t *testing.T) {
	var b strings.Builder
	b.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for i := range 12 {
		fmt.Fprintf(&b, "vllm:num_requests_running{model_name=\"m%02d\",engine=\"0\"} %d\n", i, i)
	}
	b.WriteString("vllm:num_requests_running{model_name=\"m\\\"q\"} 1\n")
	b.WriteString("vllm:num_requests_running{model_name=\"m11\",engine=\"0\"} 5\n") // a repeat
	b.WriteString("vllm:num_requests_running{engine=\"1\", model_name=\"m10\"} 1\n")
	b.WriteString("# TYPE vllm:generation_tokens_total counter\n")
	for i := range 12 {
		fmt.Fprintf(&b, "vllm:generation_tokens_total{model_name=\"m%02d\"} %d\n", i, 100+i)
	}
	body := []byte(b.String())
	fast, _ := NewParser(snapshot.VLLM, ParseOptions{ModelLimit: 4})
	slow, _ := NewParser(snapshot.VLLM, ParseOptions{ModelLimit: 4})
	slow.slowOnly = true
	for i := range 3 {
		now := time.Unix(int64(i), 0)
		fs, ferr := fast.Parse(body, "", now)
		ss, serr := slow.Parse(body, "", now)
		if ferr != nil || serr != nil {
			t.Fatal(ferr, serr)
		}
		if len(fs.Models) != 4 || fmt.Sprint(fs.Errors) != fmt.Sprint(ss.Errors) || fmt.Sprint(fs.Models) != fmt.Sprint(ss.Models) {
			t.Fatalf("parse %d: fast %d models, errors %v; slow errors %v", i, len(fs.Models), fs.Errors, ss.Errors)
		}
		if !strings.Contains(fmt.Sprint(fs.Errors), "19 series left out: more than 4 models") {
			t.Errorf("parse %d: errors %v", i, fs.Errors)
		}
		if len(fast.cache) != 8 || len(fast.canon) != 8 {
			t.Errorf("parse %d: %d series cached (%d canonical), want the 4 models' 8", i, len(fast.cache), len(fast.canon))
		}
	}
}
