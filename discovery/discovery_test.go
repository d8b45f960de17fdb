package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/goodput-exporter/goodput-exporter/attribution"
	"github.com/goodput-exporter/goodput-exporter/collector/gpu"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/exporter"
)

// TestMain fails the package when a goroutine outlives the tests: the
// informer, the discovery loop and every target must stop with their
// context.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines outlived the tests:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// engine serves a testdata body on 127.0.0.1 and returns its port.
func engine(t *testing.T, file string) int32 {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	p, _ := strconv.Atoi(u.Port())
	return int32(p)
}

// fakePods is the fake clientset's pod client, saying as the clientset
// does that it cannot stream lists (so the informer lists, then watches).
type fakePods struct {
	corev1client.PodInterface
	c *fake.Clientset
}

func (f fakePods) IsWatchListSemanticsUnSupported() bool {
	return f.c.IsWatchListSemanticsUnSupported()
}

// daemon is an exporter fed by a discoverer over a fake API server.
type daemon struct {
	t         *testing.T
	client    *fake.Clientset
	web       *httptest.Server
	mu        sync.Mutex
	selectors []string // field selectors of every pod list and watch
}

// start runs an exporter with the configured targets, discovery of
// node-a's pods (pod labels "app.kubernetes.io/name" copied) and the
// given pods already in the API server.
func start(t *testing.T, gm *gpu.Manager, configured []config.Target, pods ...runtime.Object) *daemon {
	t.Helper()
	d := &daemon{t: t, client: fake.NewClientset(pods...)}
	record := func(a k8stesting.Action) (bool, runtime.Object, error) {
		var fs string
		switch a := a.(type) {
		case k8stesting.ListAction:
			fs = a.GetListRestrictions().Fields.String()
		case k8stesting.WatchAction:
			fs = a.GetWatchRestrictions().Fields.String()
		}
		d.mu.Lock()
		d.selectors = append(d.selectors, a.GetVerb()+" "+fs)
		d.mu.Unlock()
		return false, nil, nil // let the fake answer
	}
	d.client.PrependReactor("list", "pods", record)
	d.client.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		record(a)
		return false, nil, nil
	})

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ex := exporter.New(exporter.Options{Interval: 250 * time.Millisecond, Timeout: 250 * time.Millisecond,
		NoJitter: true, Logger: logger, GPU: gm})
	ctx, cancel := context.WithCancel(context.Background())
	load := func() (*config.Config, error) {
		cfg, _ := config.Parse(nil)
		return cfg, cfg.AddTargets(configured)
	}
	if err := ex.Start(ctx, load); err != nil {
		t.Fatal(err)
	}
	disc, err := New(Options{
		Rules:      Rules{Node: "node-a", PrometheusAnnotations: true, PodLabels: []string{"app.kubernetes.io/name"}},
		Pods:       fakePods{d.client.CoreV1().Pods(metav1.NamespaceAll), d.client},
		Logger:     logger,
		Registerer: ex.Registry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- disc.Run(ctx, ex) }()
	d.web = httptest.NewServer(ex.Handler("/metrics", nil))
	t.Cleanup(func() {
		d.web.Close()
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("discovery: %v", err)
		}
		ex.Wait()
	})
	return d
}

func (d *daemon) metrics() map[string]*dto.MetricFamily {
	d.t.Helper()
	resp, err := http.Get(d.web.URL + "/metrics")
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		d.t.Fatal(err)
	}
	return mfs
}

// samples returns the samples of family name whose labels include want.
func samples(mfs map[string]*dto.MetricFamily, name string, want map[string]string) []float64 {
	var out []float64
	mf := mfs[name]
	if mf == nil {
		return nil
	}
next:
	for _, m := range mf.Metric {
		got := map[string]string{}
		for _, lp := range m.Label {
			got[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			out = append(out, m.Gauge.GetValue())
		case m.Counter != nil:
			out = append(out, m.Counter.GetValue())
		default:
			out = append(out, 0)
		}
	}
	return out
}

// seriesOf counts every series, of any family, whose target label is target.
func seriesOf(mfs map[string]*dto.MetricFamily, target string) int {
	n := 0
	for name := range mfs {
		n += len(samples(mfs, name, map[string]string{"target": target}))
	}
	return n
}

func (d *daemon) waitFor(what string, cond func(map[string]*dto.MetricFamily) bool) map[string]*dto.MetricFamily {
	d.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mfs := d.metrics()
		if cond(mfs) {
			return mfs
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// up reports whether llm_up is 1 for the labels.
func up(mfs map[string]*dto.MetricFamily, labels map[string]string) bool {
	v := samples(mfs, "llm_up", labels)
	return len(v) == 1 && v[0] == 1
}

type podOpt func(*corev1.Pod)

func onNode(n string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func annotated(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		p.Annotations = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Annotations[kv[i]] = kv[i+1]
		}
	}
}
func pending(p *corev1.Pod) { p.Status = corev1.PodStatus{Phase: corev1.PodPending} }
func labelled(v string) podOpt {
	return func(p *corev1.Pod) { p.Labels = map[string]string{"app.kubernetes.io/name": v, "secret": "x"} }
}
func containers(cs ...corev1.Container) podOpt { return func(p *corev1.Pod) { p.Spec.Containers = cs } }

// newPod is a running pod on node-a at 127.0.0.1 (where the test's
// engines listen) with one container "engine" declaring port.
func newPod(name string, port int32, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: name},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{
			{Name: "engine", Ports: []corev1.ContainerPort{{ContainerPort: port}}},
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1"},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func (d *daemon) create(p *corev1.Pod) {
	d.t.Helper()
	if _, err := d.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		d.t.Fatal(err)
	}
}

func (d *daemon) update(p *corev1.Pod) {
	d.t.Helper()
	if _, err := d.client.CoreV1().Pods(p.Namespace).Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		d.t.Fatal(err)
	}
}

func (d *daemon) delete(p *corev1.Pod) {
	d.t.Helper()
	if err := d.client.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
		d.t.Fatal(err)
	}
}

// Pods on the node come and go and their targets, with every series,
// follow without a restart; pods elsewhere, unannotated or not running
// are never scraped; a configured target runs alongside throughout.
func TestDiscoveryFollowsThePodsOfTheNode(t *testing.T) {
	vllm, sglang := engine(t, "vllm.prom"), engine(t, "sglang.prom")
	static := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		b, _ := os.ReadFile("testdata/vllm.prom")
		w.Write(b)
	}))
	defer static.Close()

	a := newPod("vllm-a", vllm, annotated(AnnotationScrape, "true"), labelled("vllm"))
	elsewhere := newPod("vllm-b", vllm, annotated(AnnotationScrape, "true"), onNode("node-b"))
	plain := newPod("plain", vllm)
	d := start(t, nil, []config.Target{{Name: "static", URL: static.URL}}, a, elsewhere, plain)

	// Present at start: its target, labelled by pod, with the allowlisted
	// pod label and not the other one.
	aLabels := map[string]string{"target": "llm/vllm-a", "namespace": "llm", "pod": "vllm-a", "container": "engine",
		"app_kubernetes_io_name": "vllm", "engine": "vllm"}
	mfs := d.waitFor("llm/vllm-a and static up", func(m map[string]*dto.MetricFamily) bool {
		return up(m, aLabels) && up(m, map[string]string{"target": "static"})
	})
	if n := len(samples(mfs, "llm_up", map[string]string{"secret": "x"})); n != 0 {
		t.Errorf("a pod label outside the allowlist was copied (%d series)", n)
	}
	if v := samples(mfs, "goodput_exporter_kubernetes_discovered_targets", nil); len(v) != 1 || v[0] != 1 {
		t.Errorf("discovered targets gauge = %v, want [1]", v)
	}

	// A pod that is created pending and then runs with an IP ("becoming
	// ready"); Prometheus-annotated, read through the fallback.
	b := newPod("sglang-a", sglang, annotated(PromScrape, "true"), pending)
	d.create(b)
	time.Sleep(time.Second) // four intervals: a pending pod must not appear
	if n := seriesOf(d.metrics(), "llm/sglang-a"); n != 0 {
		t.Fatalf("a pending pod without an IP has %d series", n)
	}
	b.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1"}
	d.update(b)
	d.waitFor("llm/sglang-a up once running", func(m map[string]*dto.MetricFamily) bool {
		return up(m, map[string]string{"target": "llm/sglang-a", "engine": "sglang", "pod": "sglang-a"})
	})

	// Relabelled: the series carry the new value and the old ones leave.
	a.Labels["app.kubernetes.io/name"] = "vllm-v2"
	d.update(a)
	d.waitFor("llm/vllm-a relabelled", func(m map[string]*dto.MetricFamily) bool {
		return up(m, map[string]string{"target": "llm/vllm-a", "app_kubernetes_io_name": "vllm-v2"}) &&
			len(samples(m, "llm_up", map[string]string{"app_kubernetes_io_name": "vllm"})) == 0
	})

	// Several containers: one target per container with a port.
	multi := newPod("multi", 0, annotated(AnnotationScrape, "true"), containers(
		corev1.Container{Name: "vllm", Ports: []corev1.ContainerPort{{ContainerPort: vllm}}},
		corev1.Container{Name: "sglang", Ports: []corev1.ContainerPort{{ContainerPort: sglang}}},
		corev1.Container{Name: "log-shipper"},
	))
	d.create(multi)
	d.waitFor("both containers of llm/multi up", func(m map[string]*dto.MetricFamily) bool {
		return up(m, map[string]string{"target": "llm/multi/vllm", "container": "vllm", "engine": "vllm"}) &&
			up(m, map[string]string{"target": "llm/multi/sglang", "container": "sglang", "engine": "sglang"})
	})

	// Annotations switched off: the target goes.
	b.Annotations = nil
	d.update(b)
	d.waitFor("llm/sglang-a gone with its annotation", func(m map[string]*dto.MetricFamily) bool {
		return seriesOf(m, "llm/sglang-a") == 0
	})

	// Deleted: every series of the target leaves; the others stay.
	before := seriesOf(d.metrics(), "llm/vllm-a")
	if before < 10 {
		t.Fatalf("llm/vllm-a has only %d series before its deletion", before)
	}
	d.delete(a)
	mfs = d.waitFor("llm/vllm-a gone", func(m map[string]*dto.MetricFamily) bool {
		return seriesOf(m, "llm/vllm-a") == 0
	})
	// The others are still there (up or not: a scrape may time out on a
	// loaded machine; what matters is that they were not removed).
	for _, other := range []string{"static", "llm/multi/vllm", "llm/multi/sglang"} {
		if n := len(samples(mfs, "llm_up", map[string]string{"target": other})); n != 1 {
			t.Errorf("deleting one pod removed %s (%d llm_up series)", other, n)
		}
	}
	for _, name := range []string{"llm/vllm-b", "llm/plain"} {
		if n := seriesOf(mfs, name); n != 0 {
			t.Errorf("%s must never be scraped, has %d series", name, n)
		}
	}
	if v := samples(mfs, "goodput_exporter_kubernetes_discovered_targets", nil); len(v) != 1 || v[0] != 2 {
		t.Errorf("discovered targets gauge = %v, want [2] (llm/multi's two containers)", v)
	}

	// Every list and watch asked for this node's pods only.
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.selectors) < 2 {
		t.Fatalf("saw %v, want a list and a watch", d.selectors)
	}
	for _, s := range d.selectors {
		if s != "list spec.nodeName=node-a" && s != "watch spec.nodeName=node-a" {
			t.Errorf("pod request %q is not restricted to node-a", s)
		}
	}
}

// A discovered target and a configured one of the same name: the file
// wins, the discovered one is left out until the file lets the name go.
func TestConfiguredTargetWinsANameClash(t *testing.T) {
	vllm, sglang := engine(t, "vllm.prom"), engine(t, "sglang.prom")
	d := start(t, nil, []config.Target{{Name: "llm/vllm-a", URL: fmt.Sprintf("http://127.0.0.1:%d/metrics", sglang)}},
		newPod("vllm-a", vllm, annotated(AnnotationScrape, "true")))
	mfs := d.waitFor("the configured llm/vllm-a up", func(m map[string]*dto.MetricFamily) bool {
		return up(m, map[string]string{"target": "llm/vllm-a", "engine": "sglang"})
	})
	if n := len(samples(mfs, "llm_up", map[string]string{"target": "llm/vllm-a"})); n != 1 {
		t.Errorf("%d llm_up series for llm/vllm-a, want the configured one only", n)
	}
	if n := len(samples(mfs, "llm_up", map[string]string{"pod": "vllm-a"})); n != 0 {
		t.Errorf("the discovered target of the same name was scraped too")
	}
}

// A pod annotated with something unusable is counted and never scraped.
func TestInvalidAnnotationsAreCounted(t *testing.T) {
	vllm := engine(t, "vllm.prom")
	d := start(t, nil, nil,
		newPod("bad-engine", vllm, annotated(AnnotationScrape, "true", AnnotationEngine, "tfserving")),
		newPod("bad-port", vllm, annotated(AnnotationScrape, "true", AnnotationPort, "http-metrics")),
		newPod("good", vllm, annotated(AnnotationScrape, "true")))
	mfs := d.waitFor("llm/good up", func(m map[string]*dto.MetricFamily) bool {
		return up(m, map[string]string{"target": "llm/good"})
	})
	if v := samples(mfs, "goodput_exporter_kubernetes_invalid_pods", nil); len(v) != 1 || v[0] != 2 {
		t.Errorf("invalid pods = %v, want [2]", v)
	}
	if n := seriesOf(mfs, "llm/bad-engine") + seriesOf(mfs, "llm/bad-port"); n != 0 {
		t.Errorf("pods with bad annotations have %d series", n)
	}
}

// kubelet is a pod-resources server like the kubelet's (as in
// attribution's tests), answering a fixed allocation.
type kubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	pods []*podresourcesv1.PodResources
}

func (k *kubelet) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	return &podresourcesv1.ListPodResourcesResponse{PodResources: k.pods}, nil
}

func startKubelet(t *testing.T, k *kubelet) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "kubelet.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, k)
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return sock
}

// A discovered pod's GPU is attributed through the kubelet's
// pod-resources API with no pod: in any file: the kubelet says pod
// llm/vllm-a holds the node's L4, whose dcgm-exporter body reads 16.365 W
// (DCGM_FI_DEV_POWER_USAGE in testdata/dcgm-exporter.prom).
func TestDiscoveredPodGetsItsGPU(t *testing.T) {
	const uuid = "GPU-c2f76b33-7953-256e-8f33-1343419b1a1c"
	sock := startKubelet(t, &kubelet{pods: []*podresourcesv1.PodResources{{
		Namespace: "llm", Name: "vllm-a",
		Containers: []*podresourcesv1.ContainerResources{{Name: "engine", Devices: []*podresourcesv1.ContainerDevices{
			{ResourceName: "nvidia.com/gpu", DeviceIds: []string{uuid}},
		}}},
	}}})
	dcgmBody, err := os.ReadFile("testdata/dcgm-exporter.prom")
	if err != nil {
		t.Fatal(err)
	}
	dcgm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(dcgmBody) }))
	defer dcgm.Close()
	backend, err := gpu.NewDCGMExporter(gpu.DCGMExporterOptions{URL: dcgm.URL})
	if err != nil {
		t.Fatal(err)
	}
	pr := attribution.NewPodResources(attribution.PodResourcesOptions{Socket: sock})
	gm := gpu.NewManager(gpu.ManagerOptions{Backend: backend, BackendName: "dcgm-exporter",
		Attributor: attribution.New(attribution.Options{Pods: pr})})
	t.Cleanup(func() { gm.Close(); pr.Close() })

	vllm := engine(t, "vllm.prom")
	d := start(t, gm, nil,
		newPod("vllm-a", vllm, annotated(AnnotationScrape, "true")),
		newPod("vllm-c", vllm, annotated(AnnotationScrape, "true"), func(p *corev1.Pod) { p.Name = "vllm-c" }))
	mfs := d.waitFor("llm/vllm-a's GPU attributed", func(m map[string]*dto.MetricFamily) bool {
		return len(samples(m, "llm_engine_gpu_power_watts", map[string]string{"target": "llm/vllm-a"})) == 1
	})
	want := map[string]string{"target": "llm/vllm-a", "namespace": "llm", "pod": "vllm-a", "method": "pod-resources"}
	if v := samples(mfs, "llm_engine_gpu_power_watts", want); len(v) != 1 || v[0] != 16.365 {
		t.Errorf("llm_engine_gpu_power_watts%v = %v, want [16.365]", want, v)
	}
	if v := samples(mfs, "llm_gpu_info", map[string]string{"uuid": uuid, "target": "llm/vllm-a", "pod": "vllm-a", "namespace": "llm"}); len(v) != 1 {
		t.Errorf("llm_gpu_info for the pod's GPU: %v", v)
	}
	// The other pod holds no GPU: it gets no power.
	if v := samples(mfs, "llm_engine_gpu_power_watts", map[string]string{"target": "llm/vllm-c"}); len(v) != 0 && v[0] != 0 {
		t.Errorf("llm/vllm-c holds no GPU but gets %v W", v)
	}
}
