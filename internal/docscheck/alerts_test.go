package docscheck

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type alertRule struct {
	Alert  string            `yaml:"alert"`
	For    string            `yaml:"for"`
	Labels map[string]string `yaml:"labels"`
}

// alerts returns the alerts of the generated rules/goodput.alerts.yml.
func alerts(t *testing.T) map[string]alertRule {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []alertRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal([]byte(read(t, "rules/goodput.alerts.yml")), &f); err != nil {
		t.Fatal(err)
	}
	out := map[string]alertRule{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out[r.Alert] = r
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d alerts in rules/goodput.alerts.yml", len(out))
	}
	return out
}

// Every table of README.md and docs/ headed "| alert | severity |" names
// alerts that exist, with the severity (and, where it has the column,
// the for:) that rules/goodput.alerts.yml gives them; the table of every
// alert in docs/rules-and-dashboards.md lists each alert once.
func TestAlertTablesMatchTheRules(t *testing.T) {
	rules := alerts(t)
	complete := map[string]int{}
	tables := 0
	for _, f := range append(seriesDocs(t), "README.md") {
		for _, tab := range TablesWith(read(t, f), "alert", "severity") {
			tables++
			forCol := -1
			for i, h := range tab.Header {
				if h == "for" {
					forCol = i
				}
			}
			full := f == "docs/rules-and-dashboards.md" && forCol == 2
			for _, row := range tab.Rows {
				code := Code(row[0])
				if len(code) != 1 {
					t.Errorf("%s:%d: an alert row names %d alerts, want one: %q", f, tab.Line, len(code), row[0])
					continue
				}
				r, ok := rules[code[0]]
				if !ok {
					t.Errorf("%s: %s is not an alert of rules/goodput.alerts.yml", f, code[0])
					continue
				}
				if full {
					complete[code[0]]++
				}
				if sev := r.Labels["severity"]; !strings.HasPrefix(row[1], sev) {
					t.Errorf("%s: %s has severity %q, the rules say %s", f, code[0], row[1], sev)
				}
				if forCol > 0 && row[forCol] != r.For {
					t.Errorf("%s: %s fires after %q, the rules say for: %s", f, code[0], row[forCol], r.For)
				}
			}
		}
	}
	if tables < 3 {
		t.Errorf("only %d alert tables in the docs", tables)
	}
	for name := range rules {
		if complete[name] != 1 {
			t.Errorf("docs/rules-and-dashboards.md's table of every alert lists %s %d times, want once", name, complete[name])
		}
	}
}

// recordWindows are the windows W of "…:ratio_rate<W>", as
// docs/rules-and-dashboards.md lists them.
var recordWindows = []string{"5m", "30m", "1h", "2h", "6h", "1d", "3d"}

// ruleNames returns the recording rules a table cell names: each code
// span, "<W>" expanded to every window, and "…:x" (or "…:m:x") the
// previous name with its last part (or parts) replaced.
func ruleNames(cell string) []string {
	var out []string
	prev := ""
	for _, c := range Code(cell) {
		if rest, ok := strings.CutPrefix(c, "…"); ok && prev != "" {
			parts := strings.Split(prev, ":")
			keep := len(parts) - strings.Count(rest, ":")
			if keep < 1 {
				continue
			}
			c = strings.Join(parts[:keep], ":") + rest
		}
		if strings.Count(c, ":") != 2 {
			continue
		}
		prev = c
		if base, ok := strings.CutSuffix(c, "<W>"); ok {
			for _, w := range recordWindows {
				out = append(out, base+w)
			}
			continue
		}
		out = append(out, c)
	}
	return out
}

// The recording-rules table of docs/rules-and-dashboards.md lists every
// rule rules/goodput.rules.yml records, and no other.
func TestRecordingRulesTableMatchesTheRules(t *testing.T) {
	var f struct {
		Groups []struct {
			Rules []struct {
				Record string `yaml:"record"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal([]byte(read(t, "rules/goodput.rules.yml")), &f); err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			}
		}
	}
	tabs := TablesWith(read(t, "docs/rules-and-dashboards.md"), "rule", "meaning")
	if len(tabs) != 1 {
		t.Fatalf("docs/rules-and-dashboards.md has %d recording-rules tables, want 1", len(tabs))
	}
	documented := map[string]bool{}
	for _, row := range tabs[0].Rows {
		names := ruleNames(row[0])
		if len(names) == 0 {
			t.Errorf("docs/rules-and-dashboards.md: rule row %q names no rule", row[0])
		}
		for _, n := range names {
			if !recorded[n] {
				t.Errorf("docs/rules-and-dashboards.md lists %s, which rules/goodput.rules.yml does not record", n)
			}
			documented[n] = true
		}
	}
	for n := range recorded {
		if !documented[n] {
			t.Errorf("docs/rules-and-dashboards.md does not list the recording rule %s", n)
		}
	}
}

// The rules table is read as the doc writes it.
func TestRuleNames(t *testing.T) {
	got := strings.Join(ruleNames("`model_slo_bound:llm_goodput_requests:rate5m`, `…:llm_goodput_tokens:rate5m`, `model:llm_kv_cache_usage_ratio:max`, `…:avg`, `a:b:ratio_rate<W>`"), " ")
	want := "model_slo_bound:llm_goodput_requests:rate5m model_slo_bound:llm_goodput_tokens:rate5m model:llm_kv_cache_usage_ratio:max model:llm_kv_cache_usage_ratio:avg " +
		"a:b:ratio_rate5m a:b:ratio_rate30m a:b:ratio_rate1h a:b:ratio_rate2h a:b:ratio_rate6h a:b:ratio_rate1d a:b:ratio_rate3d"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
