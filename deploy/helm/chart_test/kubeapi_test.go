package chart_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// The environment of `make test-kubernetes`: the kube-apiserver binary it
// built from the k8s.io/kubernetes module (test/kubernetes/apiserver) and
// Debian's etcd.
const (
	envAPIServer = "GOODPUT_KUBE_APISERVER"
	envEtcd      = "GOODPUT_ETCD"
)

// The chart rendered for the API server: ServiceMonitor and PrometheusRule
// need the Prometheus Operator's CRDs, which this API server does not
// have (their objects are decoded strictly into the operator's Go types
// by TestDefaults instead).
const realAPIValues = "serviceMonitor: {enabled: false}\nprometheusRule: {enabled: false}\n"

// figures are the test's measurements, logged together at its end (docs/kubernetes.md).
type figures struct {
	t     *testing.T
	lines []string
}

func (f *figures) add(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	f.t.Log(line)
	f.lines = append(f.lines, line)
}

// TestRealAPIServer installs the chart into a real kube-apiserver (built
// from the k8s.io/kubernetes module at the client-go version the daemon
// uses) on a real etcd, and runs the real daemon outside the cluster with
// the chart's ServiceAccount: server-side validation of every object,
// RBAC, node-scoped discovery, annotation changes, an API server outage,
// and Pod Security admission. `make test-kubernetes` builds what it needs
// and runs it; without GOODPUT_KUBE_APISERVER it is skipped.
func TestRealAPIServer(t *testing.T) {
	apiserverBin := os.Getenv(envAPIServer)
	if apiserverBin == "" {
		t.Skip("needs a kube-apiserver binary in $" + envAPIServer + " and Debian's etcd-server: run `make test-kubernetes` (docs/kubernetes.md)")
	}
	etcdBin := os.Getenv(envEtcd)
	if etcdBin == "" {
		etcdBin = "etcd"
	}
	if _, err := exec.LookPath(etcdBin); err != nil {
		t.Fatalf("%v: install Debian's etcd-server (apt-get install etcd-server) or set $%s", err, envEtcd)
	}
	fig := &figures{t: t}
	defer func() { t.Log("figures:\n  " + strings.Join(fig.lines, "\n  ")) }()
	ctx := context.Background()

	// The daemon, built as `make build` does (without the version stamp).
	start := time.Now()
	daemonBin := filepath.Join(t.TempDir(), "goodput-exporter")
	build := exec.Command("go", "build", "-o", daemonBin, "./cmd/exporter")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the daemon: %v\n%s", err, out)
	}
	fig.add("daemon build: %.1f s", time.Since(start).Seconds())

	start = time.Now()
	c := startCluster(t, apiserverBin, etcdBin)
	fig.add("etcd + kube-apiserver %s start to /readyz: %.1f s", c.apiserverVersion, time.Since(start).Seconds())
	etcdVersion, _ := exec.Command(etcdBin, "--version").Output()
	fig.add("etcd: %s", strings.Fields(string(etcdVersion) + " ? ?")[2])
	admin := c.clientset(c.admin)

	// What a controller manager would have made: the default
	// ServiceAccount of each namespace (pods cannot be created without
	// one) and the nodes.
	for _, ns := range []struct {
		name   string
		labels map[string]string
	}{
		{namespace, nil},
		{"llm", nil},
		{"restricted", map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}},
	} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.name, Labels: ns.labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().ServiceAccounts(ns.name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"node-a", "node-b"} {
		if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"nvidia.com/gpu.present": "true"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	docs := render(t, realAPIValues)
	if !t.Run("server-side apply", func(t *testing.T) {
		start := time.Now()
		if w := c.apply(t, docs, namespace, true); len(w) != 0 {
			t.Errorf("warnings applying the defaults to an unlabelled namespace: %q", w)
		}
		dry := time.Since(start)
		start = time.Now()
		c.apply(t, docs, namespace, false)
		fig.add("server-side apply of %d objects, field validation Strict: dry run %.2f s, then for real %.2f s", len(docs), dry.Seconds(), time.Since(start).Seconds())
		// Strict validation is on: an unknown field is refused, not dropped.
		var bad []doc
		for _, d := range docs {
			if d.kind == "DaemonSet" {
				d.yaml = strings.Replace(d.yaml, "imagePullPolicy:", "imagePullPolicyy:", 1)
				bad = append(bad, d)
			}
		}
		err := c.tryApply(t, bad[0], namespace, true)
		if err == nil || !strings.Contains(err.Error(), ".imagePullPolicyy: field not declared in schema") {
			t.Errorf("a DaemonSet with an unknown field: %v, want server-side apply's unknown field error", err)
		} else {
			fig.add("a misspelt field refused: %v", err)
		}
	}) {
		return
	}

	// The chart's ServiceAccount's token, as the kubelet would project it.
	tr, err := admin.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, "goodput-exporter",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa := &rest.Config{Host: c.url, BearerToken: tr.Status.Token, UserAgent: "chart-test-sa",
		TLSClientConfig: rest.TLSClientConfig{CAData: c.caPEM}}

	t.Run("RBAC", func(t *testing.T) {
		start := time.Now()
		cs := c.clientset(sa)
		// What every ServiceAccount may do (ask what it may do, read
		// public information): the rules of the namespace's default
		// ServiceAccount, which nothing is bound to. The rest is the chart's.
		tr, err := admin.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, "default",
			&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		base := c.clientset(&rest.Config{Host: c.url, BearerToken: tr.Status.Token, UserAgent: "chart-test-sa",
			TLSClientConfig: rest.TLSClientConfig{CAData: c.caPEM}})
		rules := func(cs *kubernetes.Clientset, ns string) []string {
			rr, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authzv1.SelfSubjectRulesReview{Spec: authzv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rr.Status.Incomplete {
				t.Errorf("%s: the rules review is incomplete: %s", ns, rr.Status.EvaluationError)
			}
			var out []string
			for _, r := range rr.Status.ResourceRules {
				out = append(out, fmt.Sprintf("%v %v %v %v", r.Verbs, r.APIGroups, r.Resources, r.ResourceNames))
			}
			for _, r := range rr.Status.NonResourceRules {
				out = append(out, fmt.Sprintf("%v %v", r.Verbs, r.NonResourceURLs))
			}
			return out
		}
		for _, ns := range []string{"llm", "kube-system"} {
			everyone := rules(base, ns)
			var granted []string
			for _, r := range rules(cs, ns) {
				if !slices.Contains(everyone, r) {
					granted = append(granted, r)
				}
			}
			if want := []string{"[get list watch] [] [pods] []"}; !slices.Equal(granted, want) {
				t.Errorf("in namespace %s the ServiceAccount may %q beyond what every ServiceAccount may (%q), want exactly %q", ns, granted, everyone, want)
			}
			if ns == "llm" {
				fig.add("the ServiceAccount's rules beyond every ServiceAccount's: %q (every one's: %q)", granted, everyone)
			}
		}
		for _, a := range []struct {
			attr    authzv1.ResourceAttributes
			allowed bool
		}{
			{authzv1.ResourceAttributes{Namespace: "llm", Verb: "list", Resource: "pods"}, true},
			{authzv1.ResourceAttributes{Verb: "watch", Resource: "pods"}, true},
			{authzv1.ResourceAttributes{Namespace: "llm", Verb: "get", Resource: "pods", Name: "vllm-0"}, true},
			{authzv1.ResourceAttributes{Namespace: "llm", Verb: "patch", Resource: "pods"}, false},
			{authzv1.ResourceAttributes{Namespace: "llm", Verb: "create", Resource: "pods"}, false},
			{authzv1.ResourceAttributes{Namespace: "llm", Verb: "delete", Resource: "pods"}, false},
			{authzv1.ResourceAttributes{Namespace: "llm", Verb: "get", Resource: "pods", Subresource: "log"}, false},
			{authzv1.ResourceAttributes{Namespace: "llm", Verb: "update", Resource: "pods", Subresource: "status"}, false},
			{authzv1.ResourceAttributes{Namespace: "llm", Verb: "get", Resource: "secrets"}, false},
			{authzv1.ResourceAttributes{Namespace: namespace, Verb: "get", Resource: "configmaps"}, false},
			{authzv1.ResourceAttributes{Namespace: namespace, Verb: "create", Resource: "serviceaccounts", Subresource: "token"}, false},
			// rbac.nodeCheck is off by default.
			{authzv1.ResourceAttributes{Verb: "get", Resource: "nodes", Name: "node-a"}, false},
			{authzv1.ResourceAttributes{Verb: "list", Resource: "nodes"}, false},
		} {
			r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a.attr}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status.Allowed != a.allowed {
				t.Errorf("%s %s/%s in %q: allowed %v, want %v", a.attr.Verb, a.attr.Resource, a.attr.Subresource, a.attr.Namespace, r.Status.Allowed, a.allowed)
			}
		}
		// And the API server enforces it, not only reports it.
		if _, err := cs.CoreV1().Secrets("llm").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("listing secrets with the ServiceAccount: %v, want Forbidden", err)
		}
		fig.add("RBAC checks (rules review in 2 namespaces, %d access reviews): %.2f s", 13, time.Since(start).Seconds())
	})

	// Two engines on 127.0.0.1 serving a vLLM /metrics capture; the pods
	// claim that address as their IP.
	capture := readFile(t, filepath.Join(root, "collector/testdata/fixtures/vllm/v1-kops-conformance-2026-03-qwen2.5-0.5b.prom"))
	enginePorts := [2]int{}
	for i := range enginePorts {
		enginePorts[i] = freePort(t)
		srv := &http.Server{Addr: "127.0.0.1:" + strconv.Itoa(enginePorts[i]), Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			io.WriteString(w, capture)
		})}
		go srv.ListenAndServe()
		t.Cleanup(func() { srv.Close() })
	}
	pods := admin.CoreV1().Pods("llm")
	addPod := func(name, node string, port int, ann map[string]string) {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann, Labels: map[string]string{"app.kubernetes.io/name": "vllm"}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{
				Name: "engine", Image: "vllm/vllm-openai:v0.11.0",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}},
			}}},
		}
		p, err := pods.Create(ctx, p, metav1.CreateOptions{FieldValidation: "Strict"})
		if err != nil {
			t.Fatal(err)
		}
		// What the kubelet reports once the pod runs.
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}}, HostIP: "127.0.0.1"}
		if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	annotate := func(name string, ann map[string]any) {
		t.Helper()
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
		if _, err := pods.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	scrape := map[string]string{"goodput-exporter.io/scrape": "true", "goodput-exporter.io/port": strconv.Itoa(enginePorts[0])}
	addPod("vllm-0", "node-a", enginePorts[0], scrape)
	addPod("vllm-1", "node-a", enginePorts[1], nil)
	addPod("vllm-far", "node-b", enginePorts[0], scrape)

	// The daemon, outside the cluster, with the chart's arguments, its
	// configuration and its ServiceAccount's token in a kubeconfig.
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeFile(t, kubeconfig, `apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: `+c.url+`, certificate-authority-data: `+base64.StdEncoding.EncodeToString(c.caPEM)+`}}]
users: [{name: goodput-exporter, user: {token: `+tr.Status.Token+`}}]
contexts: [{name: test, context: {cluster: test, user: goodput-exporter, namespace: `+namespace+`}}]
current-context: test
`)
	objs := decode(t, docs)
	cm := objs["ConfigMap/goodput-exporter"].(*corev1.ConfigMap)
	writeFile(t, filepath.Join(dir, "config.yml"), cm.Data["config.yml"])
	web := "127.0.0.1:" + strconv.Itoa(freePort(t))
	var args []string
	for _, a := range daemonSet(t, objs, "goodput-exporter").Spec.Template.Spec.Containers[0].Args {
		switch name, _, _ := strings.Cut(a, "="); name {
		case "--config.file":
			a = "--config.file=" + filepath.Join(dir, "config.yml")
		case "--web.listen-address":
			a = "--web.listen-address=" + web
		case "--collect.interval":
			a = "--collect.interval=1s" // the chart's 5s, shortened for the test
		case "--gpu.backend":
			a = "--gpu.backend=none" // no GPU here
		case "--gpu.pod-resources.socket":
			continue
		}
		args = append(args, a)
	}
	// At debug level the log has client-go's reflector (what it does after
	// the API server restart).
	args = append([]string{"serve"}, append(args, "--kubeconfig="+kubeconfig, "--log.level=debug")...)
	daemonLog := filepath.Join(dir, "daemon.log")
	daemon := exec.Command(daemonBin, args...)
	daemon.Env = append(os.Environ(), "NODE_NAME=node-a", "KUBERNETES_SERVICE_HOST=", "KUBECONFIG=", "HOME="+dir)
	daemon.Stdout, daemon.Stderr = logFile(t, daemonLog), logFile(t, daemonLog)
	start = time.Now()
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	daemonExited := make(chan struct{})
	go func() { daemon.Wait(); close(daemonExited) }()
	t.Cleanup(func() {
		daemon.Process.Signal(syscall.SIGTERM)
		<-daemonExited
	})
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + web + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	metrics := func() string {
		code, body := get("/metrics")
		if code != http.StatusOK {
			t.Fatalf("/metrics: %d %s", code, body)
		}
		return body
	}
	waitFor := func(what string, within time.Duration, cond func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !cond() {
			select {
			case <-daemonExited:
				t.Fatalf("the daemon exited waiting for %s:\n%s", what, tail(daemonLog, 30))
			default:
			}
			if time.Since(start) > within {
				t.Fatalf("%s: not within %v\ndaemon log:\n%s", what, within, tail(daemonLog, 30))
			}
			time.Sleep(50 * time.Millisecond)
		}
		return time.Since(start)
	}
	waitFor("/-/ready", time.Minute, func() bool { code, _ := get("/-/ready"); return code == http.StatusOK })
	fig.add("daemon start to /-/ready (first list of node-a's pods): %.2f s", time.Since(start).Seconds())

	if !t.Run("node-scoped discovery", func(t *testing.T) {
		d := waitFor("vllm-0 scraped", 30*time.Second, func() bool { v, ok := sample(metrics(), "llm_up", `target="llm/vllm-0"`); return ok && v == 1 })
		fig.add("ready to vllm-0's first successful scrape: %.2f s", d.Seconds())
		m := metrics()
		if v, _ := sample(m, "goodput_exporter_kubernetes_discovered_targets"); v != 1 {
			t.Errorf("discovered targets %v, want 1 (vllm-0; vllm-1 is not annotated, vllm-far is on node-b)", v)
		}
		if v, _ := sample(m, "goodput_exporter_kubernetes_node_pods"); v != 2 {
			t.Errorf("node pods %v, want 2 (vllm-0, vllm-1)", v)
		}
		if v, _ := sample(m, "goodput_exporter_kubernetes_sync_ok"); v != 1 {
			t.Errorf("sync_ok %v, want 1", v)
		}
		for _, pod := range []string{"llm/vllm-1", "vllm-far"} {
			if strings.Contains(m, pod) {
				t.Errorf("series of %s, which is not a target of node-a", pod)
			}
		}
	}) {
		return
	}

	t.Run("annotation changes", func(t *testing.T) {
		annotate("vllm-1", map[string]any{"goodput-exporter.io/scrape": "true"}) // port: its container's
		d := waitFor("vllm-1 scraped after annotating it", 30*time.Second, func() bool { v, ok := sample(metrics(), "llm_up", `target="llm/vllm-1"`); return ok && v == 1 })
		fig.add("annotation added to scraped target: %.2f s", d.Seconds())

		annotate("vllm-0", map[string]any{"goodput-exporter.io/port": "metrics-typo"})
		d = waitFor("vllm-0 named invalid", 30*time.Second, func() bool {
			v, ok := sample(metrics(), "goodput_exporter_kubernetes_invalid_pod_info", `pod="vllm-0"`, `reason="port"`)
			return ok && v == 1
		})
		fig.add("bad port annotation to invalid_pod_info: %.2f s", d.Seconds())
		if v, _ := sample(metrics(), "goodput_exporter_kubernetes_discovered_targets"); v != 1 {
			t.Errorf("discovered targets %v with vllm-0's port wrong, want 1", v)
		}
		if _, page := get("/"); !strings.Contains(page, "llm/vllm-0") || !strings.Contains(page, "metrics-typo") {
			t.Errorf("the status page does not name vllm-0 and its bad port")
		}

		annotate("vllm-0", map[string]any{"goodput-exporter.io/port": strconv.Itoa(enginePorts[0])})
		d = waitFor("vllm-0 back", 30*time.Second, func() bool {
			m := metrics()
			_, invalid := sample(m, "goodput_exporter_kubernetes_invalid_pod_info", `pod="vllm-0"`)
			v, _ := sample(m, "goodput_exporter_kubernetes_discovered_targets")
			up, _ := sample(m, "llm_up", `target="llm/vllm-0"`)
			return !invalid && v == 2 && up == 1
		})
		fig.add("port annotation fixed to target scraped again: %.2f s", d.Seconds())

		annotate("vllm-1", map[string]any{"goodput-exporter.io/scrape": "false"})
		d = waitFor("vllm-1 dropped", 30*time.Second, func() bool {
			v, _ := sample(metrics(), "goodput_exporter_kubernetes_discovered_targets")
			return v == 1
		})
		fig.add("scrape annotation set to false to target dropped: %.2f s", d.Seconds())
		if _, ok := sample(metrics(), "llm_up", `target="llm/vllm-1"`); ok {
			t.Errorf("vllm-1 still has series after scrape=false")
		}
	})

	// The measuring proxy's sidecar example (deploy/proxy-sidecar), as
	// shipped: applied to the API server, its pods admitted as the
	// Deployment controller would create them on node-a, and discovered
	// by the daemon as proxied targets whose goodput is exact.
	t.Run("proxy sidecar manifest", func(t *testing.T) {
		docs := sidecarDocs(t)
		start := time.Now()
		if w := c.apply(t, docs, "llm", true); len(w) != 0 {
			t.Errorf("warnings applying %s (dry run): %q", sidecarManifest, w)
		}
		dry := time.Since(start)
		start = time.Now()
		if w := c.apply(t, docs, "llm", false); len(w) != 0 {
			t.Errorf("warnings applying %s: %q", sidecarManifest, w)
		}
		if t.Failed() {
			return
		}
		fig.add("%s: server-side apply of %d objects, field validation Strict: dry run %.2f s, then for real %.2f s", sidecarManifest, len(docs), dry.Seconds(), time.Since(start).Seconds())

		// What strict decoding cannot see: a field path the kubelet
		// cannot resolve decodes into the Go types, and the API server
		// refuses it.
		bad := docs[0]
		bad.yaml = strings.Replace(bad.yaml, "fieldPath: status.hostIP}", "fieldPath: status.hostIp}", 1)
		var dep appsv1.Deployment
		if bad.yaml == docs[0].yaml || bad.kind != "Deployment" {
			t.Fatalf("%s: the first object is not a Deployment with a status.hostIP field reference", sidecarManifest)
		}
		if err := yaml.UnmarshalStrict([]byte(bad.yaml), &dep); err != nil {
			t.Fatalf("the misspelt field path does not decode: %v", err)
		}
		err := c.tryApply(t, bad, "llm", true)
		if err == nil || !strings.Contains(err.Error(), `env[0].valueFrom.fieldRef.fieldPath: Invalid value: "status.hostIp"`) {
			t.Errorf("a sidecar whose HOST_IP refers to status.hostIp: %v, want refused as an unsupported field path", err)
		} else {
			fig.add("%s with the field path status.hostIp: refused: %v", sidecarManifest, err)
		}

		// The engines, on their own loopback addresses at the manifest's
		// ports, serving real captures; the pods claim those addresses.
		engines := []struct{ name, ip, capture string }{
			{"vllm", "127.0.0.2", "vllm/v1-kops-conformance-2026-03-qwen2.5-0.5b.prom"},
			{"sglang", "127.0.0.3", "sglang/sglang-from-source.prom"},
			{"llamacpp", "127.0.0.4", "llamacpp/llamacpp-b11669-0.7.0-debian-light-load.prom"},
		}
		targetsBefore, _ := sample(metrics(), "goodput_exporter_kubernetes_discovered_targets")
		served := map[string]bool{}
		target := map[string]string{}
		urls := map[string]string{}
		start = time.Now()
		for _, e := range engines {
			// The Deployment as the API server stored it (defaults
			// filled in): its template is what the ReplicaSet's pods get.
			d, err := admin.AppsV1().Deployments("llm").Get(ctx, e.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pod := &corev1.Pod{ObjectMeta: *d.Spec.Template.ObjectMeta.DeepCopy(), Spec: *d.Spec.Template.Spec.DeepCopy()}
			pod.Name, pod.Spec.NodeName = e.name+"-7c9d5b8f4-x2k9q", "node-a"
			// The port the scrape annotation names, and its container: a
			// pod of two containers is one target per scraped container,
			// namespace/pod/container.
			var enginePort int32
			var container string
			for _, ctr := range pod.Spec.Containers {
				for _, p := range ctr.Ports {
					if p.Name == pod.Annotations["goodput-exporter.io/port"] {
						enginePort, container = p.ContainerPort, ctr.Name
					}
				}
			}
			if container != "engine" {
				t.Fatalf("%s: the scrape annotation's port %q is in container %q, want the engine's", e.name, pod.Annotations["goodput-exporter.io/port"], container)
			}
			addr := e.ip + ":" + strconv.Itoa(int(enginePort))
			capture := readFile(t, filepath.Join(root, "collector/testdata/fixtures", e.capture))
			if l, err := net.Listen("tcp", addr); err != nil {
				// Something holds the port on every address; discovery
				// is still checked, the scrape is not.
				fig.add("%s: cannot serve the engine's capture on %s (%v): its scrape is not checked", e.name, addr, err)
			} else {
				srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Type", "text/plain; version=0.0.4")
					io.WriteString(w, capture)
				})}
				go srv.Serve(l)
				t.Cleanup(func() { srv.Close() })
				served[e.name] = true
			}
			p, err := pods.Create(ctx, pod, metav1.CreateOptions{FieldValidation: "Strict"})
			if err != nil {
				t.Fatalf("%s: the Deployment's pod refused: %v", e.name, err)
			}
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: e.ip, PodIPs: []corev1.PodIP{{IP: e.ip}}, HostIP: "127.0.0.1"}
			if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			target[e.name] = "llm/" + p.Name + "/" + container
			urls[e.name] = "http://" + addr + "/metrics"
		}
		d := waitFor("the sidecar pods discovered and scraped", time.Minute, func() bool {
			m := metrics()
			if v, _ := sample(m, "goodput_exporter_kubernetes_discovered_targets"); v != targetsBefore+3 {
				return false
			}
			for _, e := range engines {
				if v, ok := sample(m, "llm_up", `target="`+target[e.name]+`"`); !ok || served[e.name] && v != 1 {
					return false
				}
			}
			return true
		})
		fig.add("sidecar pods' status set to all three discovered (and scraped where served): %.2f s", d.Seconds())
		// The status page names each pod's goodput exact, from the
		// proxy's spans, and scrapes the engine's own port, not the
		// proxy's; vllm-0, without the annotation, stays on bounds.
		_, page := get("/")
		section := func(target string) string {
			_, s, ok := strings.Cut(page, `data-target="`+target+`"`)
			if !ok {
				t.Errorf("the status page has no section for %s", target)
				return ""
			}
			s, _, _ = strings.Cut(s, "</section>")
			return html.UnescapeString(s)
		}
		for _, e := range engines {
			s := section(target[e.name])
			if !strings.Contains(s, "exact: each request judged from the measuring proxy's spans") {
				t.Errorf("%s: the status page does not call its goodput exact from the proxy's spans:\n%s", e.name, s)
			}
			if !strings.Contains(s, "<td>"+urls[e.name]+"</td>") {
				t.Errorf("%s: the status page does not show the engine's own port %s:\n%s", e.name, urls[e.name], s)
			}
			if !strings.Contains(s, "<td>"+e.name+"</td>") {
				t.Errorf("%s: the status page does not name the engine %s:\n%s", e.name, e.name, s)
			}
		}
		if s := section("llm/vllm-0"); !strings.Contains(s, "bounds: from the engine's histograms only") {
			t.Errorf("vllm-0, not behind the proxy: the status page does not say bounds:\n%s", s)
		}
	})

	t.Run("API server outage", func(t *testing.T) {
		// Throughout the outage /metrics answers and vllm-0 is scraped.
		var polls int
		var syncLost time.Time
		check := func() {
			polls++
			m := metrics()
			if v, ok := sample(m, "llm_up", `target="llm/vllm-0"`); !ok || v != 1 {
				t.Fatalf("during the outage vllm-0's llm_up is %v (present %v), want 1: targets must be kept", v, ok)
			}
			if v, _ := sample(m, "goodput_exporter_kubernetes_sync_ok"); v == 0 && syncLost.IsZero() {
				syncLost = time.Now()
			}
		}
		logBefore, _ := os.ReadFile(daemonLog)
		stopped := time.Now()
		exited := c.terminateAPIServer()
		for done := false; !done; {
			select {
			case <-exited:
				done = true
			case <-time.After(250 * time.Millisecond):
				check()
			}
		}
		down := time.Now()
		fig.add("kube-apiserver SIGTERM to exit: %.2f s (its last lines: %q)", down.Sub(stopped).Seconds(), tail(filepath.Join(c.dir, "kube-apiserver.log"), 3))
		for syncLost.IsZero() || time.Since(down) < 15*time.Second {
			if time.Since(down) > 2*time.Minute {
				t.Fatalf("sync_ok still 1 two minutes after the API server stopped\n%s", tail(daemonLog, 20))
			}
			check()
			time.Sleep(250 * time.Millisecond)
		}
		fig.add("SIGTERM to sync_ok 0: %.2f s (the process exited %.2f s after SIGTERM)", syncLost.Sub(stopped).Seconds(), down.Sub(stopped).Seconds())
		logAll, _ := os.ReadFile(daemonLog)
		for _, l := range strings.Split(string(logAll[len(logBefore):]), "\n") {
			if strings.Contains(strings.ToLower(l), "level=warn") {
				fig.add("daemon's warning in the outage: %s", l)
			}
		}
		log, _ := os.ReadFile(daemonLog)
		var warned []string
		for _, l := range strings.Split(string(log), "\n") {
			if strings.Contains(l, "cannot reach the Kubernetes API server") {
				warned = append(warned, l)
			}
		}
		// Logged when the state changes, not at each retry (a stopping
		// API server may answer one request with an error of another
		// kind first, hence up to two).
		errs := 0.0
		for _, l := range strings.Split(metrics(), "\n") {
			if strings.HasPrefix(l, "goodput_exporter_kubernetes_watch_errors_total{") {
				v, _ := sample(l, "goodput_exporter_kubernetes_watch_errors_total")
				errs += v
			}
		}
		if len(warned) == 0 || len(warned) > 2 || !strings.Contains(strings.ToLower(warned[0]), "level=warn") {
			t.Errorf("the daemon's log has %q, want one warning that the API server is unreachable:\n%s", warned, tail(daemonLog, 20))
		} else {
			fig.add("unreachable warning logged %d time(s) for %.0f failed requests", len(warned), errs)
		}
		// /-/ready waits for the first list only; the daemon keeps serving
		// its targets, so it is not taken out of rotation in an outage.
		code, _ := get("/-/ready")
		if code != http.StatusOK {
			t.Errorf("/-/ready during the outage: %d, want 200 (README: it stays 200 through a later outage)", code)
		}
		_, page := get("/")
		if !strings.Contains(page, "API server not answering") {
			t.Errorf("the status page does not say the API server is not answering")
		}
		fig.add("outage of %.0f s (SIGTERM to restart): %d reads of /metrics, all answered with vllm-0 up; /-/ready %d during it", time.Since(stopped).Seconds(), polls, code)

		restarted := time.Now()
		logAtRestart, _ := os.ReadFile(daemonLog)
		c.startAPIServer(3 * time.Minute)
		fig.add("kube-apiserver restart to /readyz: %.2f s", time.Since(restarted).Seconds())
		ready := time.Now()
		waitFor("sync_ok 1 after the restart", 2*time.Minute, func() bool { v, _ := sample(metrics(), "goodput_exporter_kubernetes_sync_ok"); return v == 1 })
		fig.add("API server ready to sync_ok 1: %.2f s", time.Since(ready).Seconds())
		// The new watch delivers changes. A watch of the test's own, opened
		// now, is the second path: it tells the API server's delay from
		// the daemon's.
		lst, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=vllm-1"})
		if err != nil {
			t.Fatal(err)
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=vllm-1", ResourceVersion: lst.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		sent := time.Now()
		seen := make(chan time.Duration, 1)
		go func() {
			for ev := range w.ResultChan() {
				if ev.Type == watch.Modified {
					seen <- time.Since(sent)
					return
				}
			}
		}()
		annotate("vllm-1", map[string]any{"goodput-exporter.io/scrape": "true"})
		d := waitFor("vllm-1 after the restart", time.Minute, func() bool { v, ok := sample(metrics(), "llm_up", `target="llm/vllm-1"`); return ok && v == 1 })
		apiLog, _ := os.ReadFile(filepath.Join(c.dir, "kube-apiserver.log"))
		fig.add("annotation change after the restart to scraped target: %.2f s (kube-apiserver log lines with \"Too large resource version\" so far: %d)",
			d.Seconds(), strings.Count(string(apiLog), "Too large resource version"))
		logAll, _ = os.ReadFile(daemonLog)
		var lines []string
		for _, l := range strings.Split(string(logAll[len(logAtRestart):]), "\n") {
			if strings.Contains(l, "component=client-go") || strings.Contains(l, "component=kubernetes") {
				lines = append(lines, l)
			}
		}
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		fig.add("the daemon's discovery log from the restart to the change (last 30 lines):\n    %s", strings.Join(lines, "\n    "))
		select {
		case a := <-seen:
			fig.add("the same change on the test's own watch, opened after the restart: %.2f s", a.Seconds())
		case <-time.After(time.Minute):
			fig.add("the same change on the test's own watch, opened after the restart: not within a minute")
		}
	})

	t.Run("requests made by the daemon", func(t *testing.T) {
		reqs := c.auditRequests("goodput-exporter")
		byVerb := map[string]int{}
		for _, r := range reqs {
			byVerb[r.Verb]++
			switch {
			case strings.HasPrefix(r.RequestURI, "/api/v1/pods?") && strings.Contains(r.RequestURI, "fieldSelector=spec.nodeName%3Dnode-a"):
			case r.Verb == "get" && r.RequestURI == "/api/v1/nodes/node-a":
				// The one-time node check, forbidden without rbac.nodeCheck.
				if r.ResponseStatus == nil || r.ResponseStatus.Code != http.StatusForbidden {
					t.Errorf("node check: %s, want 403 without rbac.nodeCheck", r)
				}
			default:
				t.Errorf("a request not scoped to node-a's pods: %s", r)
			}
		}
		var lines []string
		for _, r := range reqs {
			lines = append(lines, r.String())
		}
		fig.add("daemon's requests to the API server over %.0f s (audit log, user agent goodput-exporter): %d, by verb %v:\n    %s",
			time.Since(start).Seconds(), len(reqs), byVerb, strings.Join(lines, "\n    "))
		if rss := vmRSS(daemon.Process.Pid); rss != "" {
			fig.add("daemon VmRSS at the end: %s", rss)
		}
	})

	t.Run("Pod Security", func(t *testing.T) {
		start := time.Now()
		for _, preset := range []struct {
			name, vals string
			admitted   bool
		}{
			{"default", realAPIValues, false},
			{"podResources.enabled=false", realAPIValues + "podResources: {enabled: false}\n", true},
		} {
			docs := render(t, preset.vals)
			warn := c.apply(t, docs, "restricted", false)
			hostPathWarned := slices.ContainsFunc(warn, func(w string) bool { return strings.Contains(w, `"hostPath"`) })
			if hostPathWarned == preset.admitted {
				t.Errorf("%s: DaemonSet applied to a restricted namespace with warnings %q", preset.name, warn)
			}
			// The pod the DaemonSet controller would create on node-a.
			tmpl := daemonSet(t, decode(t, docs), "goodput-exporter").Spec.Template
			pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
			pod.Name, pod.Namespace, pod.Spec.NodeName = "goodput-exporter-"+strings.ReplaceAll(strings.ReplaceAll(preset.name, ".", "-"), "=", "-"), "restricted", "node-a"
			pod.Name = strings.ToLower(pod.Name)
			_, err := admin.CoreV1().Pods("restricted").Create(ctx, pod, metav1.CreateOptions{FieldValidation: "Strict"})
			switch {
			case preset.admitted && err != nil:
				t.Errorf("%s: the chart's pod refused in a restricted namespace: %v", preset.name, err)
			case !preset.admitted && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`) || !strings.Contains(err.Error(), "hostPath")):
				t.Errorf("%s: the chart's pod in a restricted namespace: %v, want refused for its hostPath volume", preset.name, err)
			case !preset.admitted:
				fig.add("Pod Security, %s: pod refused: %v", preset.name, err)
			default:
				fig.add("Pod Security, %s: pod admitted under restricted:latest", preset.name)
			}
		}
		fig.add("Pod Security checks: %.2f s", time.Since(start).Seconds())
	})
}

// apply applies docs with server-side apply and Strict field validation
// (dry run or for real), into ns: namespaced objects are moved there;
// cluster-scoped ones are applied only into the chart's own namespace.
// It returns the API server's warnings.
func (c *cluster) apply(t *testing.T, docs []doc, ns string, dryRun bool) []string {
	t.Helper()
	c.warnings.take()
	for _, d := range docs {
		if err := c.tryApply(t, d, ns, dryRun); err != nil {
			t.Errorf("%s %s: %v", d.kind, d.name, err)
		}
	}
	return c.warnings.take()
}

func (c *cluster) tryApply(t *testing.T, d doc, ns string, dryRun bool) error {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(d.yaml))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	gvk := u.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		u.SetNamespace(ns)
		ri = dyn.Resource(m.Resource).Namespace(ns)
	} else if ns != namespace {
		return nil
	}
	body, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	opts := metav1.PatchOptions{FieldManager: "goodput-exporter-chart", FieldValidation: "Strict"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = ri.Patch(context.Background(), u.GetName(), types.ApplyPatchType, body, opts)
	return err
}

// sample returns the value of the first sample of name whose labels
// contain every one of labels (`key="value"`).
func sample(exposition, name string, labels ...string) (float64, bool) {
	for _, line := range strings.Split(exposition, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || rest[0] != '{' && rest[0] != ' ' {
			continue
		}
		if slices.ContainsFunc(labels, func(l string) bool { return !strings.Contains(rest, l) }) {
			continue
		}
		f := strings.Fields(rest)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			continue
		}
		return v, true
	}
	return 0, false
}

func vmRSS(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
