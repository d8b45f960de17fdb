package rules

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every recording rule is the subject of an expression test, and every
// alert of an alert test, in tests/*_test.yml.
func TestEveryRuleIsTested(t *testing.T) {
	var tests strings.Builder
	paths, _ := filepath.Glob("tests/*_test.yml")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		tests.Write(b)
	}
	exprs := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+- expr: (.*)$`).FindAllStringSubmatch(tests.String(), -1) {
		for _, name := range regexp.MustCompile(`[a-z_]+:[a-z_]+:[a-z_0-9]+`).FindAllString(m[1], -1) {
			exprs[name] = true
		}
	}
	alerts := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+- alertname: (\S+)$`).FindAllStringSubmatch(tests.String(), -1) {
		alerts[m[1]] = true
	}
	rules, _ := filepath.Glob("*.yml")
	n := 0
	for _, p := range rules {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^\s+- record: (\S+)$`).FindAllStringSubmatch(string(b), -1) {
			n++
			if !exprs[m[1]] {
				t.Errorf("recording rule %s has no promtool test", m[1])
			}
		}
		for _, m := range regexp.MustCompile(`(?m)^\s+- alert: (\S+)$`).FindAllStringSubmatch(string(b), -1) {
			n++
			if !alerts[m[1]] {
				t.Errorf("alert %s has no promtool test", m[1])
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d rules found", n)
	}
}
