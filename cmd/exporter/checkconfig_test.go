package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// check-config and serve answer alike: a file of 1000 targets, past
// serve's default cap of 200, is refused by both with the same reason,
// and accepted by both once the cap allows it. check-config used to print
// "ok (1000 targets)" for a file serve refused.
func TestCheckConfigAppliesServesLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString("targets:\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "  - name: e%d\n    url: http://127.0.0.1:1/metrics\n", i)
	}
	file := filepath.Join(t.TempDir(), "many.yml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	const why = "1000 targets configured, more than the 200 of --collect.max-targets"

	out, _, err := runArgs("check-config", file)
	if !errors.Is(err, errReported) || !strings.Contains(out, why) {
		t.Errorf("check-config: %v\n%s\nwant it refused: %s", err, out, why)
	}
	_, _, err = runArgs("--config.file="+file, "--web.listen-address=127.0.0.1:0", "--gpu.backend=none")
	if err == nil || !strings.Contains(err.Error(), why) {
		t.Errorf("serve: %v, want it refused: %s", err, why)
	}

	out, _, err = runArgs("check-config", "--collect.max-targets=1000", file)
	if err != nil || !strings.Contains(out, "ok (1000 targets)") {
		t.Errorf("check-config --collect.max-targets=1000: %v\n%s", err, out)
	}
}
