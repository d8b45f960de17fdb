package chart_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// ruleGroups returns the rule groups of every PrometheusRule in a
// multi-document YAML text.
func ruleGroups(t *testing.T, text string) []string {
	t.Helper()
	var out []string
	for _, d := range strings.Split(text, "\n---") {
		var obj struct {
			Kind string
			Spec struct {
				Groups []struct{ Name string }
			}
		}
		if err := yaml.Unmarshal([]byte(d), &obj); err != nil {
			t.Fatal(err)
		}
		if obj.Kind != "PrometheusRule" {
			continue
		}
		for _, g := range obj.Spec.Groups {
			out = append(out, g.Name)
		}
	}
	return out
}

// A user applies every file under deploy/kubernetes and
// deploy/prometheus-operator (the README says so); each rule group must be
// in one of them only, or every rule and alert runs twice. The chart too
// renders each group once.
func TestEachRuleGroupShippedOnce(t *testing.T) {
	where := map[string]string{}
	var files []string
	for _, dir := range []string{manifestsDir, root + "/deploy/prometheus-operator"} {
		for _, name := range glob(t, dir+"/*.yaml") {
			files = append(files, filepath.Join(dir, name))
		}
	}
	total := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range ruleGroups(t, string(b)) {
			total++
			if prev, ok := where[g]; ok {
				t.Errorf("rule group %s is shipped in %s and in %s", g, prev, f)
			}
			where[g] = f
		}
	}
	if total == 0 {
		t.Fatal("no PrometheusRule found among the shipped files")
	}
	seen := map[string]bool{}
	for _, d := range render(t, "") {
		for _, g := range ruleGroups(t, d.yaml) {
			if seen[g] {
				t.Errorf("the chart renders rule group %s twice", g)
			}
			seen[g] = true
		}
	}
	if len(seen) != total {
		t.Errorf("the chart renders %d rule groups, the shipped PrometheusRule has %d", len(seen), total)
	}
}
