package chart_test

import (
	"strings"
	"testing"

	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// podSecurity evaluates the chart's DaemonSet pod against a Pod Security
// level as the API server's admission does, and returns the reasons it
// is refused ("" when admitted).
func podSecurity(t *testing.T, vals string, level api.Level) string {
	t.Helper()
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	pod := daemonSet(t, decode(t, render(t, vals)), "goodput-exporter").Spec.Template
	res := policy.AggregateCheckResults(ev.EvaluatePod(api.LevelVersion{Level: level, Version: api.LatestVersion()}, &pod.ObjectMeta, &pod.Spec))
	if res.Allowed {
		return ""
	}
	return strings.Join(res.ForbiddenReasons, "; ") + ": " + strings.Join(res.ForbiddenDetails, "; ")
}

// The Pod Security levels the README states for each setting: the default
// (the kubelet's pod-resources socket through a hostPath, for GPU
// attribution to pods) needs privileged; podResources.enabled=false is
// admitted under restricted.
func TestPodSecurityLevels(t *testing.T) {
	for _, c := range []struct {
		name, vals string
		level      api.Level
		admitted   bool
		why        string // in the refusal
	}{
		{"default, baseline", "", api.LevelBaseline, false, "hostPath"},
		{"default, restricted", "", api.LevelRestricted, false, "hostPath"},
		{"default, privileged", "", api.LevelPrivileged, true, ""},
		{"no pod-resources, baseline", "podResources: {enabled: false}", api.LevelBaseline, true, ""},
		{"no pod-resources, restricted", "podResources: {enabled: false}", api.LevelRestricted, true, ""},
		{"no pod-resources with NVML, restricted", "podResources: {enabled: false}\ngpu: {runtimeClassName: nvidia}", api.LevelRestricted, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			refused := podSecurity(t, c.vals, c.level)
			if c.admitted && refused != "" {
				t.Errorf("refused under %s: %s", c.level, refused)
			}
			if !c.admitted && !strings.Contains(refused, c.why) {
				t.Errorf("under %s: refusal %q, want one naming %s", c.level, refused, c.why)
			}
		})
	}
}
