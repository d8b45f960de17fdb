package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/goodput-exporter/goodput-exporter/internal/promtool"
)

var update = flag.Bool("update", false, "rewrite testdata/e2e-output.prom")

// binary is built once by TestMain for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "goodput-e2e")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "goodput-exporter")
	// -buildvcs=false: a checkout owned by another user (CI containers)
	// would otherwise fail the build on git's ownership check.
	build := exec.Command("go", "build", "-buildvcs=false", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("building the binary: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	// Commands run in this process (serve, demo, simulate) must stop every
	// goroutine they started.
	if code == 0 {
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines outlived the tests:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func serveFixture(t *testing.T, rel string) string {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("..", "..", "collector", "testdata", "fixtures", rel))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// startBinary runs the built daemon on a random loopback port and returns
// its base URL once it listens.
func startBinary(t *testing.T, args ...string) string {
	t.Helper()
	base, _ := startDaemon(t, args...)
	return base
}

// waitBody polls url until its body contains every want, or fails.
func waitBody(t *testing.T, url string, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		body := get(t, url)
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(body, w)
		}
		if ok {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("never saw %q in:\n%.3000s", want, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// SIGHUP reloads the file: a new target starts, and a broken file is
// refused with the running configuration kept. POST /-/reload is refused
// without --web.enable-lifecycle.
func TestSIGHUPReload(t *testing.T) {
	a := serveFixture(t, "vllm/v1-kops-conformance-2026-03-qwen2.5-0.5b.prom")
	b := serveFixture(t, "llamacpp/server-cuda-2026-lfm2.5-8b.prom")
	cfgPath := filepath.Join(t.TempDir(), "config.yml")
	write := func(body string) {
		if err := os.WriteFile(cfgPath, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("targets:\n  - name: a\n    url: " + a + "\n")
	base, pid := startDaemon(t, "--config.file="+cfgPath, "--collect.interval=100ms", "--collect.timeout=100ms", "--gpu.backend=none")
	waitBody(t, base+"/metrics", `llm_up{engine="vllm",target="a"} 1`)
	// Without --web.enable-lifecycle the HTTP endpoint is refused; SIGHUP
	// is the way.
	if resp, err := http.Post(base+"/-/reload", "text/plain", nil); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("POST /-/reload without --web.enable-lifecycle: %v %v, want 403", resp, err)
	} else {
		resp.Body.Close()
	}
	write("targets:\n  - name: a\n    url: " + a + "\n  - name: b\n    url: " + b + "\n    model: lfm\n")
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitBody(t, base+"/metrics", `llm_up{engine="llamacpp",target="b"} 1`, "goodput_exporter_config_last_reload_successful 1")
	write("targets:\n  - name: a\n    urll: oops\n")
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	body := waitBody(t, base+"/metrics", "goodput_exporter_config_last_reload_successful 0")
	for _, want := range []string{`llm_up{engine="vllm",target="a"} 1`, `llm_up{engine="llamacpp",target="b"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("a refused reload must keep the running targets; missing %s", want)
		}
	}
}

// startDaemon is startBinary that also returns the process ID.
func startDaemon(t testing.TB, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, append([]string{"--web.listen-address=127.0.0.1:0", "--log.format=json"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct{ Msg, Address, Component string }
			// The OTLP/HTTP receiver listens too, and says so as "otlp".
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "Listening on" && line.Component == "" {
				addr <- line.Address
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a, cmd.Process.Pid
	case <-time.After(20 * time.Second):
		t.Fatal("daemon did not start listening")
	}
	return "", 0
}

func get(t *testing.T, url string) string { return getTB(t, url) }

func getTB(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// volatile series change from run to run (timings, memory, build data).
var volatile = regexp.MustCompile(`^(go_|process_|goodput_exporter_build_info|goodput_exporter_.*(duration|timestamp)_seconds|goodput_exporter_target_body_bytes)`)

// stable keeps the samples and metadata of deterministic families.
func stable(exposition string) string {
	var out strings.Builder
	for _, line := range strings.Split(exposition, "\n") {
		name := line
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name = rest
		} else if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name = rest
		}
		if line == "" || volatile.MatchString(name) {
			continue
		}
		out.WriteString(line + "\n")
	}
	return out.String()
}

// The built binary against vLLM V1 and SGLang bodies reconstructed from
// the engines' source (v1-latest-from-source, sglang-from-source): its
// /metrics, less timings, must match the golden file, and promtool must
// find nothing to complain about in the whole output.
func TestEndToEnd(t *testing.T) {
	base := startBinary(t,
		"--target", "vllm-a="+serveFixture(t, "vllm/v1-latest-from-source.prom"),
		"--target", "sglang-b="+serveFixture(t, "sglang/sglang-from-source.prom"),
		"--collect.interval=200ms", "--collect.timeout=200ms", "--gpu.backend=none")
	var body string
	deadline := time.Now().Add(20 * time.Second)
	for {
		body = get(t, base+"/metrics")
		if strings.Contains(body, `llm_up{engine="vllm",target="vllm-a"} 1`) && strings.Contains(body, `llm_up{engine="sglang",target="sglang-b"} 1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("targets never came up:\n%s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// --gpu.backend=none: GPUs deliberately off export no GPU series, not
	// a backend_up 0 that an alert would fire on.
	if strings.Contains(body, "goodput_exporter_gpu_") {
		t.Error("GPU series exported with --gpu.backend=none")
	}
	got := stable(body)
	golden := filepath.Join("testdata", "e2e-output.prom")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if got != string(want) {
		t.Errorf("e2e output differs from %s (run with -update after checking):\n%s", golden, diffLines(string(want), got))
	}
	promtool.CheckMetrics(t, []byte(body))
}

func diffLines(want, got string) string {
	w := map[string]bool{}
	for _, l := range strings.Split(want, "\n") {
		w[l] = true
	}
	g := map[string]bool{}
	var b strings.Builder
	for _, l := range strings.Split(got, "\n") {
		g[l] = true
		if !w[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	return b.String()
}
