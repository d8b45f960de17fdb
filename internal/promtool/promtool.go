// Package promtool runs Prometheus' promtool from tests. CI installs it
// (Debian's prometheus package) and sets GOODPUT_REQUIRE_PROMTOOL=1, so
// there a missing promtool fails the test instead of skipping it.
package promtool

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// Path returns promtool's path, or skips (fails under CI) when absent.
func Path(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("GOODPUT_REQUIRE_PROMTOOL") != "" {
			t.Fatal("promtool is required but not installed (apt-get install prometheus)")
		}
		t.Skip("promtool not installed")
	}
	return path
}

// CheckMetrics fails the test when `promtool check metrics` has anything
// to say about an exposition.
func CheckMetrics(t testing.TB, exposition []byte) {
	t.Helper()
	cmd := exec.Command(Path(t), "check", "metrics")
	cmd.Stdin = bytes.NewReader(exposition)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
