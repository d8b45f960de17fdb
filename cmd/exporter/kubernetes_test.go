package main

import (
	"strings"
	"testing"
)

func TestKubernetesFlags(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // never inside a cluster here
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir()) // no ~/.kube/config
	cases := []struct {
		name string
		env  string // NODE_NAME
		args []string
		err  string
	}{
		{"no node name", "", []string{"--kubernetes.discovery"}, "needs --kubernetes.node-name or $NODE_NAME"},
		{"a pod label onto a reserved name", "node-a", []string{"--kubernetes.discovery", "--kubernetes.pod-label=model"}, `pod label "model" would be copied to "model"`},
		{"two pod labels onto one name", "", []string{"--kubernetes.discovery", "--kubernetes.node-name=n", "--kubernetes.pod-label=a.b", "--kubernetes.pod-label=a/b"}, `would both be copied to "a_b"`},
		// Valid flags, $NODE_NAME from the environment: the start fails
		// only because this is not a pod.
		{"outside a cluster", "node-a", []string{"--kubernetes.discovery", "--kubernetes.pod-label=app.kubernetes.io/name"}, "--kubernetes.discovery: no kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not running in a pod"},
		{"a kubeconfig that does not exist", "node-a", []string{"--kubernetes.discovery", "--kubeconfig=/nonexistent/kubeconfig"}, "/nonexistent/kubeconfig"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("NODE_NAME", c.env)
			args := append([]string{"serve", "--web.listen-address=127.0.0.1:0", "--gpu.backend=none"}, c.args...)
			_, errOut, err := runArgs(args...)
			if err == nil {
				t.Fatal("serve started")
			}
			if msg := err.Error() + errOut; !strings.Contains(msg, c.err) {
				t.Errorf("error %q, want one containing %q", msg, c.err)
			}
		})
	}
	// Without --kubernetes.discovery the other flags are inert.
	out, _, err := runArgs("serve", "--help")
	if err != nil || !strings.Contains(out, "--kubernetes.discovery") || !strings.Contains(out, "--[no-]kubernetes.prometheus-annotations") {
		t.Errorf("help lacks the kubernetes flags: %v\n%s", err, out)
	}
}
