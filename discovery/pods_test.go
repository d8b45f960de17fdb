package discovery

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/goodput-exporter/goodput-exporter/config"
)

// runningPod is a pod on node-a, running at 10.0.0.7, with one container
// "engine" that declares port 8000 named "http".
func runningPod(ann map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: "vllm-0", Annotations: ann,
			Labels: map[string]string{"app.kubernetes.io/name": "vllm", "team": "search"}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{
			{Name: "engine", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}}},
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7"},
	}
}

func TestRulesTargets(t *testing.T) {
	rules := Rules{Node: "node-a", PrometheusAnnotations: true, PodLabels: []string{"app.kubernetes.io/name"}}
	base := config.Target{
		Name: "llm/vllm-0", URL: "http://10.0.0.7:8000/metrics", Engine: "auto",
		Labels:    map[string]string{"namespace": "llm", "pod": "vllm-0", "container": "engine", "app_kubernetes_io_name": "vllm"},
		Namespace: "llm", Pod: "vllm-0",
	}
	with := func(f func(*config.Target)) []config.Target {
		t := base
		t.Labels = map[string]string{}
		for k, v := range base.Labels {
			t.Labels[k] = v
		}
		f(&t)
		return []config.Target{t}
	}
	same := func(*config.Target) {}
	cases := []struct {
		name  string
		rules *Rules
		pod   *corev1.Pod
		want  []config.Target
		err   string
	}{
		{name: "no annotations: not a target", pod: runningPod(nil)},
		{name: "goodput annotation, the container's declared port",
			pod: runningPod(map[string]string{AnnotationScrape: "true"}), want: with(same)},
		{name: "every annotation",
			pod: runningPod(map[string]string{AnnotationScrape: "true", AnnotationPort: "9100", AnnotationPath: "/v1/metrics",
				AnnotationScheme: "https", AnnotationEngine: "llamacpp", AnnotationModel: "lfm2.5-8b"}),
			want: with(func(t *config.Target) {
				t.URL, t.Engine, t.Model = "https://10.0.0.7:9100/v1/metrics", "llamacpp", "lfm2.5-8b"
			})},
		{name: "a named port",
			pod: runningPod(map[string]string{AnnotationScrape: "true", AnnotationPort: "http"}), want: with(same)},
		{name: "prometheus.io fallback",
			pod:  runningPod(map[string]string{PromScrape: "true", PromPort: "8001", PromPath: "/m"}),
			want: with(func(t *config.Target) { t.URL = "http://10.0.0.7:8001/m" })},
		{name: "prometheus.io fallback switched off",
			rules: &Rules{Node: "node-a"},
			pod:   runningPod(map[string]string{PromScrape: "true", PromPort: "8001"})},
		{name: "goodput port wins over prometheus.io's",
			pod:  runningPod(map[string]string{AnnotationScrape: "true", AnnotationPort: "8002", PromPort: "8001"}),
			want: with(func(t *config.Target) { t.URL = "http://10.0.0.7:8002/metrics" })},
		{name: "goodput scrape false keeps a prometheus.io pod out",
			pod: runningPod(map[string]string{AnnotationScrape: "false", PromScrape: "true"})},
		{name: "pod label not in the allowlist is not copied",
			rules: &Rules{Node: "node-a", PodLabels: []string{"team"}},
			pod:   runningPod(map[string]string{AnnotationScrape: "true"}),
			want: with(func(t *config.Target) {
				delete(t.Labels, "app_kubernetes_io_name")
				t.Labels["team"] = "search"
			})},
		{name: "IPv6 pod IP", pod: func() *corev1.Pod {
			p := runningPod(map[string]string{AnnotationScrape: "true"})
			p.Status.PodIP = "fd00::7"
			return p
		}(), want: with(func(t *config.Target) { t.URL = "http://[fd00::7]:8000/metrics" })},
		{name: "another node", pod: func() *corev1.Pod {
			p := runningPod(map[string]string{AnnotationScrape: "true"})
			p.Spec.NodeName = "node-b"
			return p
		}()},
		{name: "pending, no IP yet", pod: func() *corev1.Pod {
			p := runningPod(map[string]string{AnnotationScrape: "true"})
			p.Status = corev1.PodStatus{Phase: corev1.PodPending}
			return p
		}()},
		{name: "running without an IP", pod: func() *corev1.Pod {
			p := runningPod(map[string]string{AnnotationScrape: "true"})
			p.Status.PodIP = ""
			return p
		}()},
		{name: "succeeded", pod: func() *corev1.Pod {
			p := runningPod(map[string]string{AnnotationScrape: "true"})
			p.Status.Phase = corev1.PodSucceeded
			return p
		}()},
		// Hostile or mistaken annotations: an error, no target.
		{name: "scrape yes", pod: runningPod(map[string]string{AnnotationScrape: "yes"}), err: `scrape annotation "yes"`},
		{name: "behind the measuring proxy",
			pod:  runningPod(map[string]string{AnnotationScrape: "true", AnnotationProxy: "true"}),
			want: with(func(t *config.Target) { t.Proxied = true })},
		{name: "proxy false", pod: runningPod(map[string]string{AnnotationScrape: "true", AnnotationProxy: "false"}), want: with(same)},
		{name: "proxy yes", pod: runningPod(map[string]string{AnnotationScrape: "true", AnnotationProxy: "yes"}), err: `proxy annotation "yes"`},
		{name: "port 0", pod: runningPod(map[string]string{AnnotationScrape: "true", AnnotationPort: "0"}), err: "out of range"},
		{name: "port 70000", pod: runningPod(map[string]string{AnnotationScrape: "true", AnnotationPort: "70000"}), err: "out of range"},
		{name: "unknown port name", pod: runningPod(map[string]string{AnnotationScrape: "true", AnnotationPort: "grpc"}), err: "neither a number"},
		{name: "port with a host", pod: runningPod(map[string]string{AnnotationScrape: "true", AnnotationPort: "evil.example:80"}), err: "neither a number"},
		{name: "scheme ftp", pod: runningPod(map[string]string{AnnotationScrape: "true", AnnotationScheme: "ftp"}), err: `scheme "ftp"`},
		{name: "path without slash", pod: runningPod(map[string]string{AnnotationScrape: "true", AnnotationPath: "@evil.example/metrics"}), err: "absolute path"},
		{name: "path with a query", pod: runningPod(map[string]string{AnnotationScrape: "true", AnnotationPath: "/metrics?x=1"}), err: "absolute path"},
		{name: "unknown engine", pod: runningPod(map[string]string{AnnotationScrape: "true", AnnotationEngine: "no-such-engine"}), err: `engine "no-such-engine"`},
		{name: "model not UTF-8", pod: runningPod(map[string]string{AnnotationScrape: "true", AnnotationModel: "\xff"}), err: "model annotation"},
		{name: "model of 257 bytes", pod: runningPod(map[string]string{AnnotationScrape: "true", AnnotationModel: strings.Repeat("m", 257)}), err: "at most 256"},
		{name: "no port anywhere", pod: func() *corev1.Pod {
			p := runningPod(map[string]string{AnnotationScrape: "true"})
			p.Spec.Containers[0].Ports = nil
			return p
		}(), err: "no port annotation"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &rules
			if c.rules != nil {
				r = c.rules
			}
			got, err := r.Targets(c.pod)
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one containing %q", err, c.err)
			case c.err == "" && err != nil:
				t.Fatal(err)
			}
			if len(got) != 0 || len(c.want) != 0 {
				if !reflect.DeepEqual(got, c.want) {
					t.Errorf("targets\n got %+v\nwant %+v", got, c.want)
				}
			}
		})
	}
}

// A pod with several containers: each container that declares a port is
// a target named <namespace>/<pod>/<container>; a port annotation picks
// one, and names it after the container that declares the port.
func TestRulesSeveralContainers(t *testing.T) {
	pod := runningPod(map[string]string{AnnotationScrape: "true"})
	pod.Spec.Containers = []corev1.Container{
		{Name: "proxy", Ports: []corev1.ContainerPort{{ContainerPort: 9090, Protocol: corev1.ProtocolUDP}}},
		{Name: "prefill", Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8100}, {ContainerPort: 8101}}},
		{Name: "decode", Ports: []corev1.ContainerPort{{ContainerPort: 8200}}},
	}
	r := Rules{Node: "node-a"}
	got, err := r.Targets(pod)
	if err != nil {
		t.Fatal(err)
	}
	// The UDP-only proxy has no target; prefill's first TCP port is 8100.
	want := map[string]string{
		"llm/vllm-0/prefill": "http://10.0.0.7:8100/metrics",
		"llm/vllm-0/decode":  "http://10.0.0.7:8200/metrics",
	}
	if len(got) != len(want) {
		t.Fatalf("%d targets, want %d: %+v", len(got), len(want), got)
	}
	for _, tg := range got {
		if want[tg.Name] != tg.URL {
			t.Errorf("%s: %s, want %q", tg.Name, tg.URL, want[tg.Name])
		}
		if c := tg.Labels["container"]; "llm/vllm-0/"+c != tg.Name {
			t.Errorf("%s has container label %q", tg.Name, c)
		}
	}

	pod.Annotations[AnnotationPort] = "8200"
	got, _ = r.Targets(pod)
	if len(got) != 1 || got[0].Name != "llm/vllm-0/decode" || got[0].Labels["container"] != "decode" {
		t.Errorf("port 8200: %+v, want the decode container", got)
	}
	pod.Annotations[AnnotationPort] = "metrics"
	got, _ = r.Targets(pod)
	if len(got) != 1 || got[0].Name != "llm/vllm-0/prefill" || got[0].URL != "http://10.0.0.7:8100/metrics" {
		t.Errorf("port metrics: %+v, want prefill's 8100", got)
	}
	// A port no container declares: the pod, with no container label.
	pod.Annotations[AnnotationPort] = "7000"
	got, _ = r.Targets(pod)
	if len(got) != 1 || got[0].Name != "llm/vllm-0" || got[0].Labels["container"] != "" {
		t.Errorf("port 7000: %+v, want the pod without container", got)
	}
}

func TestLabelName(t *testing.T) {
	for in, want := range map[string]string{
		"app.kubernetes.io/name": "app_kubernetes_io_name",
		"team":                   "team",
		"9lives":                 "_9lives",
		"ünï":                    "_n_", // ü and ï are outside [a-zA-Z0-9_]: one _ each
	} {
		if got := LabelName(in); got != want {
			t.Errorf("LabelName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckPodLabels(t *testing.T) {
	if err := CheckPodLabels([]string{"app.kubernetes.io/name", "team"}); err != nil {
		t.Errorf("valid labels refused: %v", err)
	}
	for _, bad := range [][]string{
		{"model"},             // would shadow the model label
		{"pod"},               // set by discovery
		{"container"},         // set by discovery
		{"__meta_x"},          // Prometheus' own
		{"a.b", "a/b"},        // both become a_b
		{""},                  // empty
		{"team", "namespace"}, // set by discovery
	} {
		if err := CheckPodLabels(bad); err == nil {
			t.Errorf("CheckPodLabels(%q) accepted", bad)
		}
	}
}
