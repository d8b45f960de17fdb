package rules

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/internal/promtool"
)

// Every rule file (recording rules and alerts) parses, and every rule test
// passes, under a real promtool.
func TestRules(t *testing.T) {
	bin := promtool.Path(t)
	rules, _ := filepath.Glob("*.yml")
	tests, _ := filepath.Glob("tests/*_test.yml")
	if len(rules) < 2 || len(tests) == 0 {
		t.Fatalf("rules %v tests %v", rules, tests)
	}
	for _, args := range [][]string{append([]string{"check", "rules"}, rules...), append([]string{"test", "rules"}, tests...)} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}
