package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/capacity"
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
	if !errors.Is(err, capacity.ErrRegressed) || !strings.Contains(out, "regression gate: FAIL") ||
		!strings.Contains(out, "rate sweep: the knee moved to a lower load: 14 req/s (round 5), was 17 req/s (round 6)") {
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

// Rate and concurrency runs given together are two judgements, each with
// its own knee: AIPerf 0.10 runs at 0.8, 1.0 and 1.2 req/s and at
// concurrency 2 and 8 (real exports). Under the test config's TTFT P99 <
// 500 ms every run passes, so goodput still rises at each sweep's last
// round: two lower bounds, and no cost at a knee. A baseline of one kind
// against files of two is refused.
func TestCapacityMixedLoadKinds(t *testing.T) {
	var files []string
	for _, run := range []string{"0.10.0-rate0.8", "0.10.0-rate1.0", "0.10.0-rate1.2", "0.10.0-concurrency2", "0.10.0-concurrency8"} {
		files = append(files, capDir+"real/aiperf/"+run)
	}
	args := append([]string{"capacity", "--config.file", "testdata/capacity/config.yml"}, files...)
	out, errOut, err := runArgs(args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, want := range []string{
		"The files hold 2 sweeps (of different load kinds or settings); each is judged on its own.",
		"aiperf rate sweep", "aiperf concurrency sweep",
		"knee not reached: no round at a load above round 3 (1.2 req/s) missed the SLO",
		"knee not reached: no round at a load above round 2 (concurrency 8) missed the SLO",
		"cost at the best passing round (round 3, 1.2 req/s; not a knee",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "cost at the knee") {
		t.Errorf("a cost at a knee that was not reached:\n%s", out)
	}
	args = append([]string{"capacity", "--config.file", "testdata/capacity/config.yml", "--baseline", files[0]}, files...)
	if _, _, err := runArgs(args...); err == nil || !strings.Contains(err.Error(), "not of the load kinds") {
		t.Errorf("a rate baseline against rate and concurrency files: %v", err)
	}
}

// --html writes the page beside the text report: the worked example's
// knee is in it, and a failed write is an error.
func TestCapacityHTML(t *testing.T) {
	page := filepath.Join(t.TempDir(), "capacity.html")
	out, errOut, err := runArgs("capacity", "--config.file", "testdata/capacity/config.yml", "--html", page,
		capDir+"constructed/guidellm/benchmarks.json")
	if err != nil || !strings.Contains(out, "knee: round 6") {
		t.Fatalf("%v\n%s%s", err, out, errOut)
	}
	b, err := os.ReadFile(page)
	if err != nil || !strings.Contains(string(b), "knee: round 6 at 17 req/s, 3,330 tok/s of goodput") || !strings.Contains(string(b), "<svg") {
		t.Fatalf("page: %v\n%.400s", err, b)
	}
	if _, _, err := runArgs("capacity", "--config.file", "testdata/capacity/config.yml", "--html", filepath.Join(page, "x", "y.html"),
		capDir+"constructed/guidellm/benchmarks.json"); err == nil || !strings.Contains(err.Error(), "--html") {
		t.Errorf("unwritable page: %v", err)
	}
}

// A baseline from another tool and model is refused with its own exit
// status (3), not the regression's (1); --compare-anyway compares.
func TestCapacityBaselineNotComparable(t *testing.T) {
	base := capDir + "real/aiperf/0.10.0-concurrency2"
	cur := capDir + "real/vllm/sweep-v0.25.1/max_num_seqs8/summary.json"
	out, _, err := runArgs("capacity", "--config.file", "testdata/capacity/config.yml", "--baseline", base, cur)
	if !errors.Is(err, capacity.ErrNotComparable) || exitStatus(err) != 3 || !strings.Contains(out, "tool: vllm-bench-serve, the baseline aiperf") {
		t.Fatalf("%v (exit %d)\n%s", err, exitStatus(err), out)
	}
	if exitStatus(capacity.ErrRegressed) != 1 {
		t.Error("a regression's exit status is not 1")
	}
	out, _, err = runArgs("capacity", "--config.file", "testdata/capacity/config.yml", "--compare-anyway", "--baseline", base, cur)
	// compared, the opt-125m sweep's knee is at a lower goodput than the
	// Qwen run's: a regression, said with what differs
	if !errors.Is(err, capacity.ErrRegressed) || !strings.Contains(out, "compared anyway") || !strings.Contains(out, "model: facebook/opt-125m") {
		t.Fatalf("--compare-anyway: %v\n%s", err, out)
	}
}

// --all-slos judges the sweep against every SLO of the file; with --slo
// it is refused.
func TestCapacityAllSLOs(t *testing.T) {
	out, _, err := runArgs("capacity", "--config.file", "testdata/capacity/config.yml", "--all-slos", capDir+"constructed/guidellm/benchmarks.json")
	if err != nil || !strings.Contains(out, "one knee per SLO") || !strings.Contains(out, `=== SLO "chat" ===`) {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, _, err := runArgs("capacity", "--config.file", "testdata/capacity/config.yml", "--all-slos", "--slo", "chat",
		capDir+"constructed/guidellm/benchmarks.json"); err == nil {
		t.Error("--all-slos with --slo accepted")
	}
}

// --task-tokens and --task-success price a successful task: the worked
// example's 11 EUR/h over 3,330 good tok/s, 2,000 good tokens a task, 80 %
// of tasks succeeding: 11 / 3,600 / 3,330 × 2,000 / 0.8 = 0.002294 EUR.
func TestCapacityTaskCost(t *testing.T) {
	out, _, err := runArgs("capacity", "--config.file", "testdata/capacity/config.yml", "--task-tokens", "2000", "--task-success", "0.8",
		capDir+"constructed/guidellm/benchmarks.json")
	if err != nil || !strings.Contains(out, "cost per successful task: 0.0023 EUR (2000 good tokens a task ÷ a success rate of 0.8") {
		t.Fatalf("%v\n%s", err, out)
	}
	s := capacity.Sizing{HasCost: true, CostPerMillion: 11.0 / 3600 / 3330 * 1e6, TaskTokens: 2000, TaskSuccess: 0.8}
	if got, want := s.TaskCost(), 11.0/3600/3330*2000/0.8; got < want*(1-1e-12) || got > want*(1+1e-12) {
		t.Errorf("task cost %v, want %v", got, want)
	}
	for _, bad := range [][]string{{"--task-success", "0"}, {"--task-success", "1.5"}, {"--task-tokens", "-1"}} {
		args := append([]string{"capacity", "--config.file", "testdata/capacity/config.yml"}, append(bad, capDir+"constructed/guidellm/benchmarks.json")...)
		if _, _, err := runArgs(args...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
