package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
)

var upLine = regexp.MustCompile(`(?m)^llm_up\{.*\} 1$`)

var footprintBinary = flag.String("footprint.binary", "", "run BenchmarkDaemonFootprint against this daemon binary (say, one built from an earlier commit) instead of this tree's")

// BenchmarkDaemonFootprint runs the built daemon against fake engines on
// loopback, one benchmark iteration per collection interval (1 s), and
// reports the daemon's CPU time per interval (from /proc/PID/stat) and its
// resident memory (VmRSS, VmHWM). Run with -benchtime=20x.
//
// A scraper reads /metrics as Prometheus does (gzip) either every
// collection cycle or every third one (15 s at the default 5 s interval,
// Prometheus' usual scrape interval): the exposition is rendered when it
// is read, so the daemon's cost depends on how often it is read. The
// scraper's own CPU is not counted.
func BenchmarkDaemonFootprint(b *testing.B) {
	if *footprintBinary != "" {
		built := binary
		binary = *footprintBinary
		defer func() { binary = built }()
	}
	medium, err := os.ReadFile(filepath.Join("..", "..", "collector", "testdata", "fixtures", "vllm", "v1-latest-from-source.prom"))
	if err != nil {
		b.Fatal(err)
	}
	large := testbody.Multiply(medium, "meta-llama/Llama-3.1-8B-Instruct", 100)
	// A port that refuses connections, for dead targets.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/metrics"
	l.Close()
	// A server that accepts and never answers, for hanging targets.
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	b.Cleanup(hang.Close)
	for _, c := range []struct {
		name          string
		engines       int
		body          []byte
		dead, hanging int
	}{
		{"8-medium-engines", 8, medium, 0, 0},
		{"one-30k-sample-engine", 1, large, 0, 0},
		{"100-targets-10-dead-5-hanging", 85, medium, 10, 5},
	} {
		for _, every := range []int{1, 3} {
			name := c.name + "/scraped-every-cycle"
			if every == 3 {
				name = c.name + "/scraped-every-3rd-cycle"
			}
			b.Run(name, func(b *testing.B) {
				footprint(b, c.engines, c.body, c.dead, c.hanging, refused, hang.URL, every)
			})
		}
	}
}

// footprint measures one daemon; a scraper reads /metrics every
// scrapeEvery collection intervals.
func footprint(b *testing.B, engines int, engineBody []byte, dead, hanging int, refused, hangURL string, scrapeEvery int) {
	args := []string{"--collect.interval=1s", "--collect.timeout=1s", "--config.file=testdata/footprint.yml"}
	for i := range engines {
		body := engineBody
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body) }))
		b.Cleanup(srv.Close)
		args = append(args, "--target", fmt.Sprintf("engine-%d=%s", i, srv.URL))
	}
	for i := range dead {
		args = append(args, "--target", fmt.Sprintf("dead-%d=%s", i, refused))
	}
	for i := range hanging {
		args = append(args, "--target", fmt.Sprintf("hanging-%d=%s", i, hangURL))
	}
	base, pid := startDaemon(b, args...)
	time.Sleep(3 * time.Second) // every target scraped at least twice
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		body := getTB(b, base+"/metrics")
		if len(upLine.FindAllString(body, -1)) == engines {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("targets not all up:\n%.2000s", body)
		}
	}
	// Prometheus asks for gzip; http.Get does too, and unpacks it.
	scrape := func() {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	user0, sys0 := cpuTimes(b, pid)
	start := time.Now()
	n := 0
	for b.Loop() {
		time.Sleep(time.Second)
		if n++; n%scrapeEvery == 0 {
			scrape()
		}
	}
	cycles := time.Since(start).Seconds()
	user, sys := cpuTimes(b, pid)
	b.ReportMetric((user+sys-user0-sys0)/cycles*1000, "cpu-ms/cycle")
	b.ReportMetric((sys-sys0)/cycles*1000, "sys-ms/cycle")
	b.ReportMetric(procStatusMiB(b, pid, "VmRSS"), "rss-MiB")
	b.ReportMetric(procStatusMiB(b, pid, "VmHWM"), "peak-rss-MiB")
}

// cpuTimes is a process's user and system CPU time in seconds.
func cpuTimes(tb testing.TB, pid int) (user, sys float64) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// Fields after the command name (which may hold spaces) start at ")".
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return utime / 100, stime / 100 // USER_HZ
}

func procStatusMiB(tb testing.TB, pid int, key string) float64 {
	kb, ok := statusKiB(pid, key)
	if !ok {
		tb.Fatalf("%s not in /proc/%d/status", key, pid)
	}
	return float64(kb) / 1024
}
