package main

import (
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/sim"
)

func TestLoadScenario(t *testing.T) {
	sc, err := loadScenario("@testdata/scenario.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.LeverAt(2*time.Minute + time.Second); got != sim.Lever("kv_preemption") {
		t.Errorf("lever at 2m01s: %s", got)
	}
	if got := sc.LeverAt(10 * time.Minute); got != sim.Lever("healthy") {
		t.Errorf("lever at 10m: %s", got)
	}
	if _, err := loadScenario("@testdata/missing.txt"); err == nil || !strings.Contains(err.Error(), "scenario file") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := loadScenario("healthy:2m,melting:1m"); err == nil {
		t.Error("an unknown lever must be refused")
	}
}
