package chart_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const manifestsDir = root + "/deploy/kubernetes"

// manifestFile is where a kind goes among the plain manifests: the
// Prometheus Operator's resources and the dashboards apart, so that a
// cluster without the operator or Grafana applies only the first file.
func manifestFile(kind string) string {
	switch kind {
	case "ServiceMonitor", "PrometheusRule":
		return "prometheus-operator.yaml"
	}
	return "goodput-exporter.yaml"
}

const manifestHeader = `# Rendered from deploy/helm/goodput-exporter with its default values
# (release goodput-exporter, namespace monitoring) by make manifests; do
# not edit: change the chart and render again.
`

// plainManifests are the rendered defaults, file by file.
func plainManifests(t *testing.T) map[string]string {
	files := map[string]*strings.Builder{}
	for _, d := range render(t, "") {
		f := manifestFile(d.kind)
		if d.kind == "ConfigMap" && strings.Contains(d.name, "-dashboard-") {
			f = "dashboards.yaml"
		}
		b := files[f]
		if b == nil {
			b = &strings.Builder{}
			b.WriteString(manifestHeader)
			files[f] = b
		}
		b.WriteString("---\n# Source: " + d.template + "\n")
		b.WriteString(strings.TrimSpace(d.yaml) + "\n")
	}
	out := map[string]string{}
	for f, b := range files {
		out[f] = b.String()
	}
	return out
}

// The committed plain manifests are the chart's defaults rendered; with
// -update the test rewrites them (make manifests).
func TestPlainManifests(t *testing.T) {
	want := plainManifests(t)
	if len(want) != 3 {
		t.Errorf("rendered into %d files, want goodput-exporter.yaml, prometheus-operator.yaml and dashboards.yaml", len(want))
	}
	if *update {
		old, _ := filepath.Glob(manifestsDir + "/*.yaml")
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		for f, content := range want {
			if err := os.WriteFile(filepath.Join(manifestsDir, f), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var names []string
	for f := range want {
		names = append(names, f)
	}
	slices.Sort(names)
	if got := glob(t, manifestsDir+"/*.yaml"); !slices.Equal(got, names) {
		t.Errorf("deploy/kubernetes has %q, the chart renders %q: run make manifests", got, names)
	}
	for f, content := range want {
		got, err := os.ReadFile(filepath.Join(manifestsDir, f))
		if err != nil {
			t.Errorf("%v: run make manifests", err)
			continue
		}
		if string(got) != content {
			t.Errorf("deploy/kubernetes/%s differs from the chart's defaults: run make manifests", f)
		}
	}
}
