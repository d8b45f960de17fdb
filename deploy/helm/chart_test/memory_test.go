package chart_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// memoryEnv is the daemon's environment variable for the container's
// memory limit (its --runtime.memory-limit flag).
const memoryEnv = "GOODPUT_EXPORTER_MEMORY_LIMIT"

// resolve gives what the kubelet puts in an environment variable taken
// from the container's own resources: the quantity divided by the
// divisor, rounded up.
func resolve(t *testing.T, c corev1.Container, e corev1.EnvVar) int64 {
	t.Helper()
	ref := e.ValueFrom.ResourceFieldRef
	if ref.ContainerName != c.Name || ref.Resource != "limits.memory" {
		t.Fatalf("%s comes from %s of container %q, want limits.memory of %q", e.Name, ref.Resource, ref.ContainerName, c.Name)
	}
	div := ref.Divisor
	if div.IsZero() {
		div = resource.MustParse("1")
	}
	q := c.Resources.Limits[corev1.ResourceMemory]
	return (q.Value() + div.Value() - 1) / div.Value()
}

// The Go runtime's soft limit follows the pod's memory limit: the chart
// hands resources.limits.memory to the daemon in bytes (through the
// variable its flag reads), which gives the runtime 80 % of it. With the
// default 192Mi that is 161,061,273 bytes (0.8 × 201,326,592); with 512Mi,
// 0.8 × 536,870,912; without a limit the variable is absent (the downward
// API would give the node's memory instead).
func TestMemoryLimitFollowsTheContainerLimit(t *testing.T) {
	serve := readFile(t, root+"/cmd/exporter/serve.go")
	if !strings.Contains(serve, `name:"runtime.memory-limit" env:"`+memoryEnv+`"`) {
		t.Fatalf("the daemon's --runtime.memory-limit no longer reads %s", memoryEnv)
	}
	if !strings.Contains(serve, `name:"runtime.memory-limit-ratio" default:"0.8"`) {
		t.Fatal("the daemon's default soft-limit ratio is no longer 0.8: update the chart's comments and this test")
	}
	for _, c := range []struct {
		vals string
		want int64
	}{
		{"", 201326592},
		{"resources: {limits: {memory: 512Mi}}", 536870912},
		{"resources: {limits: {memory: 0.5Gi}}", 536870912},
		{"resources: {limits: null}", 0},
	} {
		ds := daemonSet(t, decode(t, render(t, c.vals)), "goodput-exporter")
		ctr := ds.Spec.Template.Spec.Containers[0]
		e, ok := envValue(ctr, memoryEnv)
		if c.want == 0 {
			if ok {
				t.Errorf("%q: %s set without a memory limit: %+v", c.vals, memoryEnv, e)
			}
			continue
		}
		if !ok || e.ValueFrom == nil || e.ValueFrom.ResourceFieldRef == nil {
			t.Fatalf("%q: %s not taken from the container's resources: %+v", c.vals, memoryEnv, e)
		}
		if got := resolve(t, ctr, e); got != c.want {
			t.Errorf("%q: %s resolves to %d bytes, want %d", c.vals, memoryEnv, got, c.want)
		}
		for _, a := range ctr.Args {
			if strings.HasPrefix(a, "--runtime.memory-limit") {
				t.Errorf("%q: %s overrides the limit the chart passes", c.vals, a)
			}
		}
		if _, ok := envValue(ctr, "GOMEMLIMIT"); ok {
			t.Errorf("%q: GOMEMLIMIT set beside the container limit: it would win", c.vals)
		}
	}
}
