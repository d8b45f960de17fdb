package testbody

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Hostile returns engines that misbehave, by name, as the reliability
// tests meet them one at a time (docs/reliability.md): each handler is
// safe to serve to many scrapes at once and stops when the request's
// context ends.
//
//	bomb        100 MiB of zeros gzipped to about 100 KiB
//	endless     an endless chunked body of valid lines
//	slowloris   a valid line, then one byte every 20 ms, forever
//	hang        accepts and never answers
//	binary      64 KiB of random bytes
//	truncated   a body cut inside a label value
//	loop        a redirect to itself
//	longnames   20 models with 256 KiB names
//	bounds      a TTFT histogram of 50,000 bucket bounds, new ones on every scrape
//	flipping    process start time and counters of two processes, alternating
func Hostile() map[string]http.Handler {
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zero := make([]byte, 1<<20)
	for range 100 {
		zw.Write(zero)
	}
	zw.Close()
	binary := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range binary {
		binary[i] = byte(rng.UintN(256))
	}
	var long strings.Builder
	long.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for i := range 20 {
		fmt.Fprintf(&long, "vllm:num_requests_running{model_name=%q} %d\n", strings.Repeat("x", 256<<10-3)+fmt.Sprintf("%03d", i), i)
	}
	longBody := []byte(long.String())
	var shift, flips atomic.Int64
	line := []byte("vllm:num_requests_running{model_name=\"a\"} 1\n")
	return map[string]http.Handler{
		"bomb": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb.Bytes())
		}),
		"endless": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			chunk := bytes.Repeat(line, 1<<10)
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}),
		"slowloris": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write(line)
			for {
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
					w.Write([]byte("#"))
				}
			}
		}),
		"hang":   http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }),
		"binary": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(binary) }),
		"truncated": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte("vllm:num_requests_running{model_name=\"a\"} 1\nvllm:num_requests_waiting{model_name=\"a"))
		}),
		"loop": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, r.URL.Path, http.StatusFound)
		}),
		"longnames": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(longBody) }),
		"bounds": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			s := shift.Add(1)
			var b bytes.Buffer
			b.WriteString("# TYPE vllm:time_to_first_token_seconds histogram\n")
			const n = 50000
			for i := range n {
				fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{le=\"%d.%06d\",model_name=\"m\"} %d\n", s, i, i)
			}
			fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} %d\n", n)
			fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_sum{model_name=\"m\"} 1\nvllm:time_to_first_token_seconds_count{model_name=\"m\"} %d\n", n)
			w.Write(b.Bytes())
		}),
		"flipping": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			f := flips.Add(1)
			start, total := 1.7e9, 500000+f
			if f%2 == 0 {
				start, total = 1.7e9+3600, 100+f
			}
			fmt.Fprintf(w, "process_start_time_seconds %g\nvllm:generation_tokens_total{model_name=\"m\"} %d\n", start, total)
		}),
	}
}
