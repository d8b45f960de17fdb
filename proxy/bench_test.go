package proxy

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// benchEngine streams chunks SSE events of a realistic size (a vLLM chat
// chunk is about 200 bytes), flushing each, after an optional gap.
func benchEngine(chunks int, gap time.Duration) http.Handler {
	event := []byte(`data: {"id":"chatcmpl-8a1f","object":"chat.completion.chunk","created":1733412345,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	usage := []byte(`data: {"id":"chatcmpl-8a1f","object":"chat.completion.chunk","created":1733412345,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[],"usage":{"prompt_tokens":12,"total_tokens":112,"completion_tokens":100}}` + "\n\n")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := range chunks {
			if gap > 0 && i > 0 {
				time.Sleep(gap)
			}
			w.Write(event)
			fl.Flush()
		}
		w.Write(usage)
		w.Write([]byte("data: [DONE]\n\n"))
	})
}

const benchBody = `{"model":"meta-llama/Llama-3.1-8B-Instruct","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"Say something."}]}`

// cpuNow is the process's user and system CPU time.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchPaths are the three ways to the engine: direct, through a bare
// httputil.ReverseProxy (the floor), and through the measuring proxy
// with its spans exported to a receiver that discards them.
func benchPaths(b *testing.B, engine http.Handler) (direct, bare, measured string, p *Proxy) {
	up := httptest.NewServer(engine)
	b.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	tr := &http.Transport{MaxIdleConnsPerHost: 2048}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }, Transport: tr, ErrorLog: log.New(io.Discard, "", 0)}
	bareSrv := httptest.NewServer(rp)
	b.Cleanup(bareSrv.Close)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	b.Cleanup(sink.Close)
	p, err := New(Options{Upstream: u, InjectUsage: true, Transport: tr.Clone()})
	if err != nil {
		b.Fatal(err)
	}
	exp := NewExporter(ExporterOptions{Endpoint: sink.URL}, p.Metrics)
	ctx, cancel := context.WithCancel(context.Background())
	go exp.Run(ctx)
	b.Cleanup(func() { cancel(); <-exp.Done() })
	p.SetSink(exp.Enqueue)
	mSrv := httptest.NewServer(p)
	b.Cleanup(mSrv.Close)
	return up.URL, bareSrv.URL, mSrv.URL, p
}

var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2048, MaxConnsPerHost: 0}}

// benchStream sends one request and reads the stream, returning the time to
// the first byte of the body and to its end.
func benchStream(b *testing.B, base string) (ttfb, e2e time.Duration) {
	t0 := time.Now()
	resp, err := benchClient.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(benchBody))
	if err != nil {
		b.Error(err)
		return 0, 0
	}
	defer resp.Body.Close()
	buf := make([]byte, 512)
	first := true
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 && first {
			ttfb, first = time.Since(t0), false
		}
		if err != nil {
			break
		}
	}
	return ttfb, time.Since(t0)
}

// BenchmarkChunkCPU: process CPU per streamed chunk (100 chunks and the
// usage chunk per request) on each path, requests interleaved so that the
// three share the machine's conditions. The engine and client run in
// this process on every path; direct is their share, so a proxy's own
// cost is its path's minus direct's. Reports that cost for the bare
// ReverseProxy and the measuring proxy, and their ratio. paced: the
// engine pauses 200 µs between chunks, so that each is read, written and
// flushed on its own, as a decoding engine's tokens are; flood: it
// writes them back to back, and a proxy reads several per read.
func BenchmarkChunkCPU(b *testing.B) {
	for _, c := range []struct {
		name string
		gap  time.Duration
	}{{"paced", 200 * time.Microsecond}, {"flood", 0}} {
		b.Run(c.name, func(b *testing.B) {
			const chunks = 100
			direct, bare, measured, _ := benchPaths(b, benchEngine(chunks, c.gap))
			for _, base := range []string{direct, bare, measured} {
				benchStream(b, base) // connections up
			}
			var cpu [3]time.Duration
			b.ResetTimer()
			for range b.N {
				for i, base := range []string{direct, bare, measured} {
					c0 := cpuNow()
					benchStream(b, base)
					cpu[i] += cpuNow() - c0
				}
			}
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N*(chunks+1)) }
			floor, ours := per(cpu[1]-cpu[0]), per(cpu[2]-cpu[0])
			b.ReportMetric(per(cpu[0]), "direct-cpu-ns/chunk")
			b.ReportMetric(floor, "reverseproxy-cpu-ns/chunk")
			b.ReportMetric(ours, "proxy-cpu-ns/chunk")
			b.ReportMetric(ours/floor, "ratio")
		})
	}
}

// BenchmarkAddedLatency: with C streams at once (1, 100, 1,000; each 20
// chunks 1 ms apart), the time to first byte and to the end of each
// stream through the measuring proxy minus direct, at p50 and p99, rounds
// of direct and proxied requests alternating (at least 200 of each per
// iteration). Also the share of chunks the proxy itself held over 1 ms
// (read from the engine to flushed to the client, from its histogram).
func BenchmarkAddedLatency(b *testing.B) {
	for _, c := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("streams=%d", c), func(b *testing.B) {
			direct, _, measured, p := benchPaths(b, benchEngine(20, time.Millisecond))
			var mu sync.Mutex
			var samples [2][2][]time.Duration // path, ttfb/e2e
			round := func(path int, base string) {
				var wg sync.WaitGroup
				for range c {
					wg.Add(1)
					go func() {
						defer wg.Done()
						ttfb, e2e := benchStream(b, base)
						mu.Lock()
						samples[path][0] = append(samples[path][0], ttfb)
						samples[path][1] = append(samples[path][1], e2e)
						mu.Unlock()
					}()
				}
				wg.Wait()
			}
			round(0, direct)
			round(1, measured)
			samples = [2][2][]time.Duration{}
			// At least 200 samples per path per iteration, for a p99.
			rounds := max(1, 200/c)
			b.ResetTimer()
			for range b.N * rounds {
				round(0, direct)
				round(1, measured)
			}
			q := func(s []time.Duration, p float64) float64 {
				s = slices.Clone(s)
				slices.Sort(s)
				return float64(s[int(p*float64(len(s)-1))].Microseconds())
			}
			// The proxy's own share: a chunk read from the engine to its
			// flush to the client, from its histogram.
			var hm dto.Metric
			p.Metrics.addedChunk.(prometheus.Metric).Write(&hm)
			h := hm.GetHistogram()
			for _, bk := range h.GetBucket() {
				if bk.GetUpperBound() == 1e-3 {
					b.ReportMetric(100*(1-float64(bk.GetCumulativeCount())/float64(h.GetSampleCount())), "chunks-over-1ms-%")
				}
			}
			for k, what := range []string{"ttfb", "e2e"} {
				b.ReportMetric(q(samples[1][k], 0.5)-q(samples[0][k], 0.5), "added-"+what+"-p50-µs")
				b.ReportMetric(q(samples[1][k], 0.99)-q(samples[0][k], 0.99), "added-"+what+"-p99-µs")
			}
		})
	}
}

// BenchmarkMemoryPerStream: the heap held per open stream, each stopped
// after its first chunk (the engine waits for the client to go), on each
// path, 500 streams at a time; a proxy's own share is its path's minus
// direct's. Streams of both paths hold the engine's and the client's
// goroutines and buffers, which direct's figure is.
func BenchmarkMemoryPerStream(b *testing.B) {
	const n = 500
	release := make(chan struct{})
	engine := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(`data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}` + "\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	direct, bare, measured, _ := benchPaths(b, engine)
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse + ms.StackInuse
	}
	var per [3]float64
	for range b.N {
		for i, base := range []string{direct, bare, measured} {
			release = make(chan struct{})
			before := heap()
			var bodies []io.ReadCloser
			var mu sync.Mutex
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := benchClient.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(benchBody))
					if err != nil {
						b.Error(err)
						return
					}
					buf := make([]byte, 1)
					resp.Body.Read(buf)
					mu.Lock()
					bodies = append(bodies, resp.Body)
					mu.Unlock()
				}()
			}
			wg.Wait()
			per[i] += float64(heap()-before) / n
			close(release)
			for _, body := range bodies {
				io.Copy(io.Discard, body)
				body.Close()
			}
		}
	}
	b.ReportMetric(per[0]/float64(b.N), "direct-B/stream")
	b.ReportMetric((per[1]-per[0])/float64(b.N), "reverseproxy-B/stream")
	b.ReportMetric((per[2]-per[0])/float64(b.N), "proxy-B/stream")
}
