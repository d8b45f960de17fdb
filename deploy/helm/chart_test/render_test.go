// Package chart_test renders the Helm chart in deploy/helm/goodput-exporter
// with the Helm library, which this separate module keeps out of the
// daemon's build, and checks what it renders: every object decodes
// strictly into its Kubernetes or Prometheus Operator type, the security
// settings and RBAC, the rules and dashboards against their sources, the
// configuration against the daemon's own parser, and the plain manifests
// of deploy/kubernetes/ against the rendered defaults.
package chart_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite deploy/kubernetes/ from the chart's defaults")

const (
	root     = "../../.."
	chartDir = "../goodput-exporter"
	// The release the plain manifests are rendered as.
	releaseName = "goodput-exporter"
	namespace   = "monitoring"
)

// doc is one rendered object: its template, kind, name and YAML.
type doc struct {
	template, kind, name, yaml string
}

// render renders the chart with vals over its defaults, in install order.
func render(t *testing.T, vals string) []doc {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	user := map[string]any{}
	if err := yaml.Unmarshal([]byte(vals), &user); err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, user, chartutil.ReleaseOptions{
		Name: releaseName, Namespace: namespace, IsInstall: true, Revision: 1,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatal(err)
	}
	for name := range files {
		if !strings.HasSuffix(name, ".yaml") {
			delete(files, name) // NOTES.txt, helpers
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 0 {
		t.Errorf("the chart has %d hooks; plain manifests cannot express them", len(hooks))
	}
	var out []doc
	for _, m := range manifests {
		if m.Head == nil || m.Head.Metadata == nil {
			t.Fatalf("%s: an object without kind or name:\n%s", m.Name, m.Content)
		}
		out = append(out, doc{m.Name, m.Head.Kind, m.Head.Metadata.Name, m.Content})
	}
	return out
}

// decode decodes every object strictly (an unknown or duplicate field is
// an error) into its type, and returns them by "Kind/name".
func decode(t *testing.T, docs []doc) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, d := range docs {
		var obj any
		switch d.kind {
		case "ServiceAccount":
			obj = &corev1.ServiceAccount{}
		case "ConfigMap":
			obj = &corev1.ConfigMap{}
		case "Secret":
			obj = &corev1.Secret{}
		case "Service":
			obj = &corev1.Service{}
		case "DaemonSet":
			obj = &appsv1.DaemonSet{}
		case "ClusterRole":
			obj = &rbacv1.ClusterRole{}
		case "ClusterRoleBinding":
			obj = &rbacv1.ClusterRoleBinding{}
		case "ServiceMonitor":
			obj = &monitoringv1.ServiceMonitor{}
		case "PrometheusRule":
			obj = &monitoringv1.PrometheusRule{}
		default:
			t.Errorf("%s: kind %s has no type to check it against", d.template, d.kind)
			continue
		}
		if err := yaml.UnmarshalStrict([]byte(d.yaml), obj); err != nil {
			t.Errorf("%s (%s %s) does not decode strictly: %v\n%s", d.template, d.kind, d.name, err, d.yaml)
			continue
		}
		key := d.kind + "/" + d.name
		if _, dup := out[key]; dup {
			t.Errorf("%s rendered twice", key)
		}
		out[key] = obj
	}
	return out
}

func kinds(objs map[string]any) []string {
	var ks []string
	for k := range objs {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func daemonSet(t *testing.T, objs map[string]any, name string) *appsv1.DaemonSet {
	t.Helper()
	ds, ok := objs["DaemonSet/"+name].(*appsv1.DaemonSet)
	if !ok {
		t.Fatalf("no DaemonSet %s among %v", name, kinds(objs))
	}
	return ds
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// glob lists the base names of the files matching pattern.
func glob(t *testing.T, pattern string) []string {
	t.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	return names
}

func mustContain(t *testing.T, what string, list []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(list, w) {
			t.Errorf("%s lacks %q: %q", what, w, list)
		}
	}
}

func mustLack(t *testing.T, what string, list []string, bad ...string) {
	t.Helper()
	for _, b := range bad {
		for _, l := range list {
			if strings.HasPrefix(l, b) {
				t.Errorf("%s has %q: %q", what, l, list)
			}
		}
	}
}

func envValue(c corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

func fmtKinds(objs map[string]any) string { return fmt.Sprint(kinds(objs)) }
