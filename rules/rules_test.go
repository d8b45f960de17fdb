package rules

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func promtool(t *testing.T) string {
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

// Every rule file parses, and every rule test passes, under a real promtool.
func TestRules(t *testing.T) {
	bin := promtool(t)
	rules, _ := filepath.Glob("*.rules.yml")
	tests, _ := filepath.Glob("tests/*_test.yml")
	if len(rules) == 0 || len(tests) == 0 {
		t.Fatalf("rules %v tests %v", rules, tests)
	}
	for _, args := range [][]string{append([]string{"check", "rules"}, rules...), append([]string{"test", "rules"}, tests...)} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}
