package chart_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	gediscovery "github.com/goodput-exporter/goodput-exporter/discovery"
)

// The measuring proxy's sidecar example (deploy/proxy-sidecar): every
// object decodes strictly; each Service sends clients to the proxy; the
// proxy forwards to its own pod's engine and reports to the node's
// daemon; and the daemon's discovery makes each pod one proxied target
// that scrapes the engine's own port, matched to the proxy's spans by
// the pod's name and namespace.
func TestProxySidecarManifest(t *testing.T) {
	deployments := map[string]*appsv1.Deployment{}
	services := map[string]*corev1.Service{}
	for _, d := range sidecarDocs(t) {
		switch d.kind {
		case "Deployment":
			var o appsv1.Deployment
			if err := yaml.UnmarshalStrict([]byte(d.yaml), &o); err != nil {
				t.Fatalf("a Deployment does not decode strictly: %v", err)
			}
			deployments[o.Name] = &o
		case "Service":
			var o corev1.Service
			if err := yaml.UnmarshalStrict([]byte(d.yaml), &o); err != nil {
				t.Fatalf("a Service does not decode strictly: %v", err)
			}
			services[o.Name] = &o
		default:
			t.Fatalf("unexpected kind %s", d.kind)
		}
	}
	rules := gediscovery.Rules{Node: "node-a"}
	for _, name := range []string{"vllm", "sglang", "llamacpp"} {
		dep, svc := deployments[name], services[name]
		if dep == nil || svc == nil {
			t.Fatalf("%s: no Deployment or Service", name)
		}
		spec := dep.Spec.Template.Spec
		var engine, proxy *corev1.Container
		for i := range spec.Containers {
			switch spec.Containers[i].Name {
			case "engine":
				engine = &spec.Containers[i]
			case "goodput-proxy":
				proxy = &spec.Containers[i]
			}
		}
		if engine == nil || proxy == nil {
			t.Fatalf("%s: want containers engine and goodput-proxy", name)
		}
		port := func(c *corev1.Container, n string) int32 {
			for _, p := range c.Ports {
				if p.Name == n {
					return p.ContainerPort
				}
			}
			t.Fatalf("%s: container %s has no port %s", name, c.Name, n)
			return 0
		}
		enginePort, apiPort := port(engine, "metrics"), port(proxy, "api")
		if len(proxy.Args) == 0 || proxy.Args[0] != "proxy" {
			t.Errorf("%s: the proxy container runs %v, want the proxy command", name, proxy.Args)
		}
		for _, want := range []string{
			"--listen=:" + itoa(int64(apiPort)),
			"--upstream=http://127.0.0.1:" + itoa(int64(enginePort)),
			"--otlp-endpoint=http://$(HOST_IP):4318/v1/traces",
		} {
			if !slices.Contains(proxy.Args, want) {
				t.Errorf("%s: proxy args %v lack %s", name, proxy.Args, want)
			}
		}
		envs := map[string]string{}
		for _, e := range proxy.Env {
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				envs[e.Name] = e.ValueFrom.FieldRef.FieldPath
			}
		}
		if envs["HOST_IP"] != "status.hostIP" || envs["POD_NAME"] != "metadata.name" || envs["POD_NAMESPACE"] != "metadata.namespace" {
			t.Errorf("%s: proxy env %v", name, envs)
		}
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort != intstr.FromString("api") || svc.Spec.Ports[0].Port != enginePort {
			t.Errorf("%s: the Service must keep the engine's port and send it to the proxy's api port: %+v", name, svc.Spec.Ports)
		}
		pod := &corev1.Pod{ObjectMeta: dep.Spec.Template.ObjectMeta, Spec: spec,
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.9"}}
		pod.Name, pod.Namespace, pod.Spec.NodeName = name+"-abc", dep.Namespace, "node-a"
		targets, err := rules.Targets(pod)
		if err != nil || len(targets) != 1 {
			t.Fatalf("%s: discovery: %v, %d targets", name, err, len(targets))
		}
		tg := targets[0]
		if !tg.Proxied || tg.URL != "http://10.0.0.9:"+itoa(int64(enginePort))+"/metrics" || tg.Pod != pod.Name || tg.Namespace != "llm" || tg.Traces != nil {
			t.Errorf("%s: discovered %+v", name, tg)
		}
	}
}

// sidecarManifest is the measuring proxy's sidecar example.
const sidecarManifest = "deploy/proxy-sidecar/engines.yaml"

// sidecarDocs splits the sidecar example into its objects, in file order
// (TestRealAPIServer applies them to a real API server).
func sidecarDocs(t *testing.T) []doc {
	t.Helper()
	raw, err := os.ReadFile(root + "/" + sidecarManifest)
	if err != nil {
		t.Fatal(err)
	}
	var out []doc
	for _, d := range strings.Split(string(raw), "\n---\n") {
		var meta struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal([]byte(d), &meta); err != nil {
			t.Fatalf("%s: %v", sidecarManifest, err)
		}
		if meta.Kind == "" {
			continue // the leading comment
		}
		out = append(out, doc{template: sidecarManifest, kind: meta.Kind, name: meta.Metadata.Name, yaml: d})
	}
	return out
}

// otlp.httpPort opens the daemon's OTLP/HTTP receiver on a hostPort, where
// the sidecars send; by default it stays closed.
func TestOTLPHostPort(t *testing.T) {
	ds := daemonSet(t, decode(t, render(t, "otlp: {httpPort: 4318}\n")), releaseName)
	c := ds.Spec.Template.Spec.Containers[0]
	mustContain(t, "args", c.Args, "--otlp.http.listen-address=:4318")
	found := false
	for _, p := range c.Ports {
		found = found || p.Name == "otlp-http" && p.ContainerPort == 4318 && p.HostPort == 4318
	}
	if !found {
		t.Errorf("no otlp-http hostPort 4318 in %+v", c.Ports)
	}
	def := daemonSet(t, decode(t, render(t, "")), releaseName).Spec.Template.Spec.Containers[0]
	for _, a := range def.Args {
		if strings.HasPrefix(a, "--otlp.") {
			t.Errorf("the default renders %s", a)
		}
	}
}
