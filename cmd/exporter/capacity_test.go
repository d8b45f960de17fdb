package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

const capDir = "../../capacity/testdata/"

// The capacity command prints the worked example's sizing chain from a
// GuideLLM report: knee round 6 (3,330 tok/s of goodput), 6 replicas for
// 20,000 tok/s, 11 EUR/h / 3,600 / 3,330 × 1e6 = 0.92 EUR per million
// good tokens. The numbers come out of capacity.Judge and goodput's
// formulas; see capacity.TestWorkedExample for the hand working.
func TestCapacityCommand(t *testing.T) {
	vllm, _ := filepath.Glob(capDir + "constructed/vllm/round*.json")
	for name, files := range map[string][]string{
		"guidellm": {capDir + "constructed/guidellm/benchmarks.json"},
		"vllm":     vllm,
	} {
		args := append([]string{"capacity", "--config.file", "testdata/capacity/config.yml", "--peak", "20000"}, files...)
		out, errOut, err := runArgs(args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, errOut)
		}
		for _, want := range []string{
			"knee: round 6 at 17 req/s, 3,330 tok/s of goodput",
			"replicas for 20,000 tok/s at peak: 6",
			"cost at the knee: 0.92 EUR per million good tokens (11.00 EUR/h a replica)",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", name, want, out)
			}
		}
	}
	// two GPUs a replica double the price: 1.84 EUR per million
	out, _, err := runArgs("capacity", "--config.file", "testdata/capacity/config.yml", "--replica-gpus", "2",
		capDir+"constructed/guidellm/benchmarks.json")
	if err != nil || !strings.Contains(out, "1.84 EUR per million good tokens (22.00 EUR/h a replica)") {
		t.Fatalf("--replica-gpus 2: %v\n%s", err, out)
	}
}

// The regression gate passes an unchanged sweep and fails, with a
// non-zero exit, one whose knee moved a round earlier.
func TestCapacityGate(t *testing.T) {
	base := capDir + "constructed/guidellm/benchmarks.json"
	out, _, err := runArgs("capacity", "--config.file", "testdata/capacity/config.yml", "--baseline", base, base)
	if err != nil || !strings.Contains(out, "regression gate: pass") {
		t.Fatalf("unchanged: %v\n%s", err, out)
	}
	out, _, err = runArgs("capacity", "--config.file", "testdata/capacity/config.yml", "--baseline", base,
		capDir+"constructed/guidellm/regressed.json")
	if !errors.Is(err, errRegressed) || !strings.Contains(out, "regression gate: FAIL") ||
		!strings.Contains(out, "the knee moved to a lower rate: 14 req/s (round 5), was 17 req/s (round 6)") {
		t.Fatalf("regressed: %v\n%s", err, out)
	}
	for _, bad := range [][]string{
		{"--max-drop", "1.5", base},
		{"--slo", "nope", base},
		{"--peak", "-1", base},
	} {
		args := append([]string{"capacity", "--config.file", "testdata/capacity/config.yml"}, bad...)
		if _, _, err := runArgs(args...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
