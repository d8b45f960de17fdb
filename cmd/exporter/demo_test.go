package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

var goodTokens = regexp.MustCompile(`(?m)^llm_goodput_tokens_total\{[^}]*bound="lower"[^}]*\} (\S+)$`)
var exactRequests = regexp.MustCompile(`(?m)^llm_goodput_traced_requests_total\{[^}]*sampled="false"[^}]*target="vllm-0"[^}]*\} (\S+)$`)

// The SGLang engine's requests reach the daemon through the measuring
// proxy: exact goodput for it too.
var proxiedRequests = regexp.MustCompile(`(?m)^llm_goodput_traced_requests_total\{[^}]*sampled="false"[^}]*target="sglang-1"[^}]*\} (\S+)$`)

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
	var outMu sync.Mutex
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			outMu.Lock()
			out.WriteString(line + "\n")
			outMu.Unlock()
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
		proxiedN := 0.0
		for _, m := range proxiedRequests.FindAllStringSubmatch(body, -1) {
			v, _ := strconv.ParseFloat(m[1], 64)
			proxiedN += v
		}
		if good > 0 && traced > 0 && proxiedN > 0 && strings.Contains(body, `llm_gpu_power_watts{gpu="1"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no goodput, or no traced requests from vLLM or through the SGLang engine's proxy, in the daemon's /metrics after 120 s:\n%.3000s", body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	outMu.Lock()
	printed := out.String()
	outMu.Unlock()
	checkDemoURLs(t, printed)
	// Wait for a frame of the view (every fifth refresh without a
	// terminal), however slowly a loaded machine draws it.
	for drawn := false; !drawn; time.Sleep(100 * time.Millisecond) {
		outMu.Lock()
		drawn = strings.Contains(out.String(), "FAILURE MODE")
		outMu.Unlock()
		if !drawn && time.Now().After(deadline) {
			break
		}
	}
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

// demoURL is a line the demo prints before its first frame: what is
// served, and its URL.
var demoURL = regexp.MustCompile(`(?m)^(daemon|status|health|engine|gpus): .*?(http://\S+)`)

// checkDemoURLs GETs every URL the demo printed: each must answer 200 with
// what its line says it is, and every thing the demo serves must be
// printed (the daemon's /metrics, its status page and health, each
// simulated engine, the GPU endpoint).
func checkDemoURLs(t *testing.T, printed string) {
	t.Helper()
	// What each kind of line's URL must serve: a word only it has.
	want := map[string]string{
		"daemon": "llm_goodput_tokens_total",
		"status": "<html",
		"health": "OK",
		"gpus":   "DCGM_FI_DEV_POWER_USAGE",
	}
	seen := map[string]int{}
	for _, m := range demoURL.FindAllStringSubmatch(printed, -1) {
		kind, url := m[1], m[2]
		seen[kind]++
		resp, err := http.Get(url)
		if err != nil {
			t.Errorf("%s %s: %v", kind, url, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s: HTTP %d", kind, url, resp.StatusCode)
			continue
		}
		word := want[kind]
		if kind == "engine" {
			// vllm-0 serves vllm:..., sglang-1 sglang:...
			word = strings.SplitN(strings.Fields(m[0])[1], "-", 2)[0] + ":"
		}
		if !strings.Contains(string(body), word) {
			t.Errorf("%s %s does not serve %q:\n%.500s", kind, url, word, body)
		}
	}
	for kind, n := range map[string]int{"daemon": 1, "status": 1, "health": 1, "engine": 2, "gpus": 1} {
		if seen[kind] != n {
			t.Errorf("the demo printed %d %s URLs, want %d:\n%.2000s", seen[kind], kind, n, printed)
		}
	}
	if !strings.Contains(printed, "otlp: ") {
		t.Errorf("the demo does not say where its OTLP receiver is:\n%.2000s", printed)
	}
}
