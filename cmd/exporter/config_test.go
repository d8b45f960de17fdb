package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// One check-config run lists every problem of a file, decoding problems
// (a bad duration, an unknown key, a bad size, an unknown objective) and
// validation problems (an unknown target, a ratio above 1, a missing
// currency) alike, each with its line.
func TestCheckConfigPrintsEveryError(t *testing.T) {
	const file = "../../config/testdata/invalid-many.yml"
	out, _, err := runArgs("check-config", file)
	if !errors.Is(err, errReported) {
		t.Fatalf("err = %v, want the errors reported", err)
	}
	want := file + `: line 2: "2,5s" is not a duration (use 500ms, 2.5s, 1m)
` + file + `: line 6: unknown key "enigne" in a target (use name, url, engine, timeout, max_body_size, model, model_limit, labels, gpus, namespace, pod, traces, proxied)
` + file + `: line 7: "lots" is not a positive size (use bytes or KiB, MiB, GiB)
` + file + `: line 10: slos[0].match.targets: no target is named "vllm-1"
` + file + `: line 13: unknown objective "latency" (use ttft, tpot, itl, e2e, queue or error)
` + file + `: line 14: slos[0].objectives.tpot.target: must be a ratio strictly between 0 and 1, got 1.5
` + file + `: line 15: pricing.currency: is required (e.g. USD, EUR)
`
	if out != want {
		t.Errorf("check-config printed:\n%s\nwant:\n%s", out, want)
	}
}

// A 2.5 s TTFT threshold is read, and since 2.5 s is a bucket bound of
// vLLM's TTFT histogram it is judged exactly: in the window captures the
// le="2.5" buckets of the two ranks move 1097 -> 1207 and 1007 -> 1108, so
// 110 + 101 = 211 of the 230 requests met it, none interpolated.
func TestDecimalThresholdOnABucketBound(t *testing.T) {
	slos := filepath.Join(t.TempDir(), "slos.yml")
	err := os.WriteFile(slos, []byte(`targets:
  - name: vllm-a
    url: http://127.0.0.1:8000/metrics
slos:
  - name: chat
    objectives:
      ttft: { threshold: 2.5s, target: 0.9 }
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runArgs("slo-report", "--config.file", slos, "--target", "vllm-a",
		"--window", "60s", windowDir+"t0.prom", windowDir+"t1.prom")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	row := reportRow(t, out, "chat", "ttft")
	if row[5] != "230" || row[6] != "211.0" || row[9] != "0.0" {
		t.Errorf("judged %s, good %s, interpolated %s; want 230, 211.0, 0.0:\n%s", row[5], row[6], row[9], out)
	}
}

func TestServeTimeoutDefault(t *testing.T) {
	for _, c := range []struct {
		interval, flag, want time.Duration
	}{
		{5 * time.Second, 0, 4 * time.Second},                                // the default
		{time.Second, 0, time.Second},                                        // clamped to the interval
		{1500 * time.Millisecond, 0, 1500 * time.Millisecond},                // clamped, decimal
		{10 * time.Second, 2500 * time.Millisecond, 2500 * time.Millisecond}, // explicit
	} {
		s := serveCmd{Interval: c.interval, Timeout: c.flag, TelemetryPath: "/metrics"}
		if err := s.Validate(); err != nil {
			t.Errorf("interval %v, timeout %v: %v", c.interval, c.flag, err)
		}
		if got := s.timeout(); got != c.want {
			t.Errorf("interval %v, timeout %v: effective %v, want %v", c.interval, c.flag, got, c.want)
		}
	}
}

// serve --collect.interval 1s starts (the default timeout is clamped to
// the interval) and serves /metrics until stopped; 0.5s is read too.
func TestServeWithAShortInterval(t *testing.T) {
	for _, interval := range []string{"1s", "0.5s"} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			var out, errb strings.Builder
			done <- run(ctx, []string{"serve", "--collect.interval", interval, "--web.listen-address=" + addr,
				"--gpu.backend=none", "--target", "a=http://127.0.0.1:1/metrics"}, &out, &errb)
		}()
		up := false
		for i := 0; i < 100 && !up; i++ {
			select {
			case err := <-done:
				cancel()
				t.Fatalf("--collect.interval %s: serve returned %v", interval, err)
			case <-time.After(50 * time.Millisecond):
			}
			resp, err := http.Get("http://" + addr + "/metrics")
			if err == nil {
				up = resp.StatusCode == http.StatusOK
				resp.Body.Close()
			}
		}
		cancel()
		if err := <-done; err != nil || !up {
			t.Errorf("--collect.interval %s: served %v, returned %v", interval, up, err)
		}
	}
}
