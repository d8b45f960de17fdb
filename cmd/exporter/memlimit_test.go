package main

import (
	"net"
	"runtime/debug"
	"strings"
	"testing"
)

// serve gives the Go runtime 80 % of the container's limit, taken from
// GOODPUT_EXPORTER_MEMORY_LIMIT as the Helm chart sets it (bytes, from
// resources.limits.memory), before anything else; GOMEMLIMIT wins; a bad
// ratio or limit is refused.
func TestServeSetsTheSoftMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	serve := func(extra ...string) string {
		t.Helper()
		args := append([]string{"--web.listen-address=" + l.Addr().String(), "--gpu.backend=none"}, extra...)
		_, stderr, err := runArgs(args...)
		if err == nil || !strings.Contains(err.Error(), "listening on") {
			t.Fatalf("serve on a taken port: %v", err)
		}
		return stderr
	}
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOODPUT_EXPORTER_MEMORY_LIMIT", "201326592") // 192Mi
	log := serve()
	// 0.8 × 201,326,592 = 161,061,273.6, rounded down.
	if got := debug.SetMemoryLimit(-1); got != 161061273 {
		t.Errorf("soft limit %d, want 161061273 (80 %% of 192 MiB)", got)
	}
	if !strings.Contains(log, "soft memory limit 161061273 bytes, 80% of the container's 201326592 bytes (--runtime.memory-limit)") {
		t.Errorf("the soft limit is not logged:\n%s", log)
	}
	serve("--runtime.memory-limit=256MiB", "--runtime.memory-limit-ratio=0.5")
	if got := debug.SetMemoryLimit(-1); got != 128<<20 {
		t.Errorf("soft limit %d, want %d", got, 128<<20)
	}
	// The chart's own notation, a Kubernetes quantity: 0.8 × 192Mi.
	serve("--runtime.memory-limit=192Mi")
	if got := debug.SetMemoryLimit(-1); got != 161061273 {
		t.Errorf("--runtime.memory-limit=192Mi: soft limit %d, want 161061273", got)
	}
	t.Setenv("GOMEMLIMIT", "100MiB")
	debug.SetMemoryLimit(100 << 20) // what the runtime read at start
	if log := serve(); !strings.Contains(log, "from GOMEMLIMIT") || debug.SetMemoryLimit(-1) != 100<<20 {
		t.Errorf("GOMEMLIMIT not left alone: %d\n%s", debug.SetMemoryLimit(-1), log)
	}
	for _, bad := range [][]string{{"--runtime.memory-limit-ratio=1.5"}, {"--runtime.memory-limit=lots"}} {
		if _, _, err := runArgs(append([]string{"--gpu.backend=none"}, bad...)...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
