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
//	huge        a chunked body of 100 MB of valid lines (read to the target's cap)
//	models      10,000 models in one body of about 8.7 MB
//	longvalues  2,000 series whose label values are 8 KiB long, new every scrape
//	labels      2,000 series of 500 labels each
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
	var models bytes.Buffer
	pad := strings.Repeat("a-model-with-a-long-name-", 3)
	for _, fam := range []string{"num_requests_running gauge", "num_requests_waiting gauge", "prompt_tokens_total counter", "generation_tokens_total counter", "request_success_total counter"} {
		name, typ, _ := strings.Cut(fam, " ")
		fmt.Fprintf(&models, "# TYPE vllm:%s %s\n", name, typ)
		for i := range 10000 {
			reason := ""
			if typ == "counter" && name == "request_success_total" {
				reason = `,finished_reason="stop"`
			}
			fmt.Fprintf(&models, "vllm:%s{engine=\"0\",model_name=\"hostile/%s-%05d\"%s} %d\n", name, pad, i, reason, i)
		}
	}
	modelsBody := models.Bytes()
	var labels bytes.Buffer
	labels.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for i := range 2000 {
		labels.WriteString("vllm:num_requests_running{model_name=\"m\"")
		for j := range 499 {
			fmt.Fprintf(&labels, ",l%03d=\"%d\"", j, i)
		}
		labels.WriteString("} 1\n")
	}
	labelsBody := labels.Bytes()
	huge := bytes.Repeat([]byte(`vllm:generation_tokens_total{model_name="m"} 1`+"\n"), 1<<14)
	var shift, flips, longs atomic.Int64
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
		"huge": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for written := 0; written < 100e6 && r.Context().Err() == nil; written += len(huge) {
				if _, err := w.Write(huge); err != nil {
					return
				}
			}
		}),
		"models": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(modelsBody) }),
		"labels": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(labelsBody) }),
		"longvalues": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			n := longs.Add(1)
			var b bytes.Buffer
			b.WriteString("# TYPE vllm:num_requests_running gauge\n")
			v := strings.Repeat("v", 8<<10)
			for i := range 2000 {
				fmt.Fprintf(&b, "vllm:num_requests_running{model_name=\"m\",x=\"%s-%d-%d\"} 1\n", v, n, i)
			}
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
