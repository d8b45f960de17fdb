package sim

import (
	"strings"
	"testing"
	"time"
)

func TestLoadScenario(t *testing.T) {
	sc, err := LoadScenario("@testdata/scenario.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.LeverAt(2*time.Minute + time.Second); got != Lever("kv_preemption") {
		t.Errorf("lever at 2m01s: %s", got)
	}
	if got := sc.LeverAt(10 * time.Minute); got != Lever("healthy") {
		t.Errorf("lever at 10m: %s", got)
	}
	if _, err := LoadScenario("@testdata/missing.txt"); err == nil || !strings.Contains(err.Error(), "scenario file") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := LoadScenario("healthy:2m,melting:1m"); err == nil {
		t.Error("an unknown lever must be refused")
	}
}
