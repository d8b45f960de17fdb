package main

import (
	"bufio"
	"context"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var goodTokens = regexp.MustCompile(`(?m)^llm_goodput_tokens_total\{[^}]*bound="lower"[^}]*\} (\S+)$`)
var exactRequests = regexp.MustCompile(`(?m)^llm_goodput_traced_requests_total\{[^}]*sampled="false"[^}]*target="vllm-0"[^}]*\} (\S+)$`)

// The README's first command, driven in-process for a few seconds: the
// daemon it starts must serve non-zero goodput for the simulated engines.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--web.listen-address=127.0.0.1:0", "--speed=20",
			"--collect.interval=300ms", "--refresh=200ms", "--duration=180s"}, pw, io.Discard)
		pw.Close()
	}()
	urls := make(chan string, 1)
	var out strings.Builder
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			out.WriteString(line + "\n")
			if u, ok := strings.CutPrefix(line, "daemon: "); ok {
				urls <- u
			}
		}
	}()
	var url string
	select {
	case url = <-urls:
	case <-time.After(60 * time.Second):
		t.Fatal("the demo printed no daemon URL")
	}
	// Generous: under -race on two busy cores the simulator and the daemon
	// share the machine with the other packages' tests.
	deadline := time.Now().Add(120 * time.Second)
	for {
		body := get(t, url)
		good := 0.0
		for _, m := range goodTokens.FindAllStringSubmatch(body, -1) {
			v, _ := strconv.ParseFloat(m[1], 64)
			good += v
		}
		// The vLLM engine's request spans are judged too (bound="exact").
		traced := 0.0
		for _, m := range exactRequests.FindAllStringSubmatch(body, -1) {
			v, _ := strconv.ParseFloat(m[1], 64)
			traced += v
		}
		if good > 0 && traced > 0 && strings.Contains(body, `llm_gpu_power_watts{gpu="1"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no goodput, or no traced requests, in the daemon's /metrics after 120 s:\n%.3000s", body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second) // a few frames of the view
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("demo returned %v", err)
	}
	<-scanned
	if !strings.Contains(out.String(), "GOOD TOK/S") || !strings.Contains(out.String(), "FAILURE MODE") {
		t.Errorf("the live view was never drawn with its verdict:\n%s", out.String())
	}
	// The view fits a 120-column terminal.
	for _, line := range strings.Split(out.String(), "\n") {
		if n := utf8.RuneCountInString(line); n > 120 {
			t.Errorf("a line of %d columns:\n%s", n, line)
		}
	}
}
