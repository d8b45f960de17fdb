package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/demo"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// The demo's tour ends each lever's effect before the next: at the end of
// every healthy spell after a lever the simulated engine has no backlog,
// its cache is back under half and it no longer preempts, so the next
// phase shows its own mode and not the one before.
func TestDemoTourEndsEachLever(t *testing.T) {
	tour, err := sim.LoadScenario(demo.DefaultTour)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig()
	tour.Repeat = false
	cfg.Scenario = tour
	e, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var at time.Duration
	seen := map[sim.Lever]bool{}
	for i, p := range tour.Phases {
		if p.Duration == 0 {
			break
		}
		seen[p.Lever] = true
		at += p.Duration
		if p.Lever != sim.Healthy || i == 0 {
			continue
		}
		e.AdvanceTo(at - 30*time.Second)
		before := e.State()
		e.AdvanceTo(at - time.Millisecond)
		s := e.State()
		if s.Waiting > 5 || s.KVUsage > 0.5 || s.Counters.Preemptions != before.Counters.Preemptions {
			t.Errorf("end of the healthy spell after %s: %d waiting, KV %.2f, %d preemptions in its last 30 s",
				tour.Phases[i-1].Lever, s.Waiting, s.KVUsage, s.Counters.Preemptions-before.Counters.Preemptions)
		}
	}
	for _, l := range sim.Levers {
		if !seen[l] {
			t.Errorf("the tour never uses %s", l)
		}
	}
}

// exporter's self-check test plays the demo's tour from its own copy;
// the copy must be the tour the demo plays.
func TestDemoTourCopyInExporterTests(t *testing.T) {
	raw, err := os.ReadFile("../../exporter/testdata/demo-tour.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(raw)); got != demo.DefaultTour {
		t.Errorf("exporter/testdata/demo-tour.txt is not the demo's default tour:\n%s\nwant\n%s", got, demo.DefaultTour)
	}
}
