package mixin

import (
	"strings"
	"testing"
)

// TimeScale divides what the rules evaluate and keeps every name: worked
// by hand for a scale of 60 (an hour becomes a minute).
func TestTimeScale(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"5m", "5s"}, {"30s", "500ms"}, {"1h", "1m"}, {"2m", "2s"}, {"15m", "15s"},
		{"3d", "1h12m"}, {"30d", "12h"}, {"1d", "24m"}, {"", ""},
	} {
		if got := (Config{TimeScale: 60}).scaleDuration(c.in); got != c.want {
			t.Errorf("scale %q by 60 = %q, want %q", c.in, got, c.want)
		}
	}
	c := Default()
	c.TimeScale = 60
	find := func(groups []Group, name string) (Group, Rule) {
		for _, g := range groups {
			for _, r := range g.Rules {
				if r.Record == name || r.Alert == name {
					return g, r
				}
			}
		}
		t.Fatalf("no rule %s", name)
		return Group{}, Rule{}
	}
	g, r := find(c.RecordingGroups(), "target_model_slo_objective_outcome:llm_slo_requests:rate5m")
	if g.Interval != "500ms" || !strings.Contains(r.Expr, "llm_slo_requests_total{job=\"goodput-exporter\"}[5s]") {
		t.Errorf("5m window at scale 60: interval %q, expr %s", g.Interval, r.Expr)
	}
	g, r = find(c.RecordingGroups(), "target_model_slo_objective_outcome:llm_slo_requests:tile_rate1h")
	if g.Interval != "1m" || !strings.Contains(r.Expr, "[1m]") {
		t.Errorf("1h tile at scale 60: interval %q, expr %s", g.Interval, r.Expr)
	}
	_, r = find(c.RecordingGroups(), "target_model_slo_objective:llm_slo_attainment:ratio_rate3d")
	if !strings.Contains(r.Expr, `tile_rate1h{outcome="good"}[1h12m]`) {
		t.Errorf("3d window at scale 60 reads %s", r.Expr)
	}
	_, r = find(c.AlertGroups(), "LLMErrorBudgetBurn1h")
	if r.For != "1s" || !strings.Contains(r.Expr, "ratio_rate1h") || !strings.Contains(r.Expr, "ratio_rate5m") {
		t.Errorf("page burn alert at scale 60: for %q, expr %s", r.For, r.Expr)
	}
	if !strings.Contains(r.Annotations["description"], "last 1h") {
		t.Errorf("texts keep the nominal windows: %s", r.Annotations["description"])
	}
	// A window's increase turned into a rate divides by the window as
	// it runs: 5 s at scale 60, 300 s shipped.
	_, r = find(c.RecordingGroups(), "target_model_slo_bound:llm_goodput_tokens:rate5m")
	if !strings.Contains(r.Expr, "window_increase5m) / 5\n") {
		t.Errorf("good-token rate at scale 60: %s", r.Expr)
	}
	_, r = find(Default().RecordingGroups(), "target_model_slo_bound:llm_goodput_tokens:rate5m")
	if !strings.Contains(r.Expr, "window_increase5m) / 300\n") {
		t.Errorf("shipped good-token rate: %s", r.Expr)
	}
	// Unscaled, the shipped rules are untouched.
	_, r = find(Default().AlertGroups(), "LLMErrorBudgetBurn1h")
	if r.For != "1m" {
		t.Errorf("shipped for: %q", r.For)
	}
}

func TestParsePromDurationRejectsGarbage(t *testing.T) {
	for _, s := range []string{"m5", "5", "5x", "1h-5m"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%q parsed", s)
				}
			}()
			parsePromDuration(s)
		}()
	}
}
