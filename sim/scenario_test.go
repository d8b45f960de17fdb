package sim

import (
	"testing"
	"time"
)

func TestParseScenario(t *testing.T) {
	sc, err := ParseScenario("healthy:2m, kv_preemption:3m ,healthy:1m")
	if err != nil {
		t.Fatal(err)
	}
	want := []Phase{{Lever: Healthy, Duration: 2 * time.Minute}, {Lever: KVPreemption, Duration: 3 * time.Minute}, {Lever: Healthy, Duration: time.Minute}}
	if len(sc.Phases) != 3 || sc.Repeat {
		t.Fatalf("got %+v", sc)
	}
	for i := range want {
		if sc.Phases[i] != want[i] {
			t.Fatalf("phase %d: %+v, want %+v", i, sc.Phases[i], want[i])
		}
	}
	for _, s := range []string{"healthy:2m0s,kv_preemption:3m0s,healthy:1m0s", "healthy:30s,engine_stall", "healthy:30s,engine_stall:20s,repeat"} {
		sc, err := ParseScenario(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if sc.String() != s {
			t.Fatalf("round trip %q gave %q", s, sc.String())
		}
	}
}

func TestParseScenarioErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                               "scenario: empty (want lever:duration,...)",
		"healthy:2m,kv_preemtion:3m":     `scenario: phase 2 "kv_preemtion:3m": unknown lever "kv_preemtion" (want one of healthy, queue_growth, kv_preemption, prefill_interference, kv_monopoly, prefix_cache_collapse, decode_saturation, gpu_throttling, engine_stall)`,
		"healthy:abc":                    `scenario: phase 1 "healthy:abc": bad duration: time: invalid duration "abc"`,
		"healthy:-1m":                    `scenario: phase 1 "healthy:-1m": duration must be positive`,
		"healthy,queue_growth:1m":        "scenario: phase 1 (healthy): only the last phase may omit its duration",
		"repeat,healthy:1m":              `scenario: "repeat" must come last`,
		"healthy:1m,engine_stall,repeat": "scenario: phase 2 (engine_stall): repeat needs every phase to have a duration",
	} {
		_, err := ParseScenario(in)
		if err == nil || err.Error() != want {
			t.Errorf("ParseScenario(%q) error\n got: %v\nwant: %s", in, err, want)
		}
	}
}

func TestScenarioLeverAt(t *testing.T) {
	sc, _ := ParseScenario("healthy:10s,engine_stall:5s,repeat")
	for at, want := range map[time.Duration]Lever{0: Healthy, 9 * time.Second: Healthy, 10 * time.Second: EngineStall, 16 * time.Second: Healthy, 26 * time.Second: EngineStall} {
		if got := sc.LeverAt(at); got != want {
			t.Errorf("LeverAt(%v) = %s, want %s", at, got, want)
		}
	}
}

// The engine follows the script: each phase's lever holds for its
// duration, and the last one stays.
func TestEngineFollowsScenario(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Scenario, _ = ParseScenario("healthy:10s,queue_growth:5s,prefix_cache_collapse")
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		at   time.Duration
		want Lever
	}{{5 * time.Second, Healthy}, {10 * time.Second, QueueGrowth}, {14 * time.Second, QueueGrowth}, {15 * time.Second, PrefixCacheCollapse}, {time.Minute, PrefixCacheCollapse}} {
		e.AdvanceTo(step.at)
		if e.Lever() != step.want {
			t.Fatalf("at %v: lever %s, want %s", step.at, e.Lever(), step.want)
		}
	}
	e.SetLever(Healthy)
	e.Advance(time.Minute)
	if e.Lever() != Healthy {
		t.Fatalf("SetLever did not end the script: %s", e.Lever())
	}
}

func TestEveryLeverIsDescribed(t *testing.T) {
	for _, l := range Levers {
		if l.Description() == "" {
			t.Errorf("%s has no description", l)
		}
		if got, err := ParseLever(string(l)); err != nil || got != l {
			t.Errorf("ParseLever(%q) = %q, %v", l, got, err)
		}
	}
}
