package attribution

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// kubelet is a pod-resources server like the kubelet's, on a unix socket.
type kubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer

	mu    sync.Mutex
	pods  []*podresourcesv1.PodResources
	delay time.Duration
	calls int
}

func (k *kubelet) List(ctx context.Context, _ *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	k.mu.Lock()
	k.calls++
	pods, delay := k.pods, k.delay
	k.mu.Unlock()
	select {
	case <-time.After(delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &podresourcesv1.ListPodResourcesResponse{PodResources: pods}, nil
}

func (k *kubelet) set(delay time.Duration, pods ...*podresourcesv1.PodResources) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pods, k.delay = pods, delay
}

func (k *kubelet) callCount() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.calls
}

// startKubelet serves k on a socket in a temporary directory.
func startKubelet(t *testing.T, k *kubelet) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "kubelet.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, k)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-done; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("serve: %v", err)
		}
	})
	return sock
}

func pod(ns, name string, devices ...*podresourcesv1.ContainerDevices) *podresourcesv1.PodResources {
	return &podresourcesv1.PodResources{
		Namespace: ns, Name: name,
		Containers: []*podresourcesv1.ContainerResources{{Name: "engine", Devices: devices}},
	}
}

func dev(resource string, ids ...string) *podresourcesv1.ContainerDevices {
	return &podresourcesv1.ContainerDevices{ResourceName: resource, DeviceIds: ids}
}

func show(pds []PodDevices) string {
	var parts []string
	for _, p := range pds {
		parts = append(parts, fmt.Sprintf("%s/%s/%s %s %v", p.Namespace, p.Pod, p.Container, p.Resource, p.DeviceIDs))
	}
	return strings.Join(parts, "; ")
}

func TestPodResourcesList(t *testing.T) {
	k := &kubelet{}
	k.set(0,
		pod("llm", "vllm-0", dev("nvidia.com/gpu", "GPU-aaaa", "GPU-bbbb"), dev("example.com/nic", "eth1")),
		pod("llm", "small", dev("nvidia.com/mig-1g.10gb", "MIG-cccc")),
		pod("llm", "shared", dev("nvidia.com/gpu.shared", "GPU-dddd::2")),
		pod("kube-system", "coredns"),
	)
	c := NewPodResources(PodResourcesOptions{Socket: startKubelet(t, k)})
	defer func() { _ = c.Close() }()
	got, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := "llm/vllm-0/engine nvidia.com/gpu [GPU-aaaa GPU-bbbb]; llm/small/engine nvidia.com/mig-1g.10gb [MIG-cccc]; " +
		"llm/shared/engine nvidia.com/gpu.shared [GPU-dddd::2]"
	if show(got) != want {
		t.Errorf("List:\n got %s\nwant %s", show(got), want)
	}
}

func TestPodResourcesSocketMissing(t *testing.T) {
	c := NewPodResources(PodResourcesOptions{Socket: filepath.Join(t.TempDir(), "kubelet.sock")})
	_, err := c.List(context.Background())
	if !errors.Is(err, ErrSocketMissing) || !strings.Contains(err.Error(), "mount /var/lib/kubelet/pod-resources") {
		t.Errorf("err = %v, want a missing-socket error saying what to mount", err)
	}
}

func TestPodResourcesSlowKubelet(t *testing.T) {
	k := &kubelet{}
	k.set(10*time.Second, pod("llm", "vllm-0", dev("nvidia.com/gpu", "GPU-aaaa")))
	c := NewPodResources(PodResourcesOptions{Socket: startKubelet(t, k), Timeout: 100 * time.Millisecond})
	defer func() { _ = c.Close() }()
	start := time.Now()
	got, err := c.List(context.Background())
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("List took %v despite a 100ms timeout", took)
	}
	if err == nil || !strings.Contains(err.Error(), "longer than 100ms") || got != nil {
		t.Errorf("got %v, err %v; want no devices and a timeout error", got, err)
	}
}

// Pods come and go between calls: within the TTL the cached answer is
// reused (one call), after it the change shows.
func TestPodResourcesTTL(t *testing.T) {
	k := &kubelet{}
	k.set(0, pod("llm", "vllm-0", dev("nvidia.com/gpu", "GPU-aaaa")))
	c := NewPodResources(PodResourcesOptions{Socket: startKubelet(t, k), TTL: 200 * time.Millisecond})
	defer func() { _ = c.Close() }()
	ctx := context.Background()

	first, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	k.set(0, pod("llm", "vllm-1", dev("nvidia.com/gpu", "GPU-bbbb")))
	cached, err := c.List(ctx)
	if err != nil || show(cached) != show(first) || k.callCount() != 1 {
		t.Errorf("within TTL: %s (err %v, %d calls), want the first answer from one call", show(cached), err, k.callCount())
	}
	time.Sleep(250 * time.Millisecond)
	fresh, err := c.List(ctx)
	if err != nil || show(fresh) != "llm/vllm-1/engine nvidia.com/gpu [GPU-bbbb]" {
		t.Errorf("after TTL: %s (err %v), want vllm-1", show(fresh), err)
	}
	k.set(0)
	time.Sleep(250 * time.Millisecond)
	if gone, err := c.List(ctx); err != nil || len(gone) != 0 || gone == nil {
		t.Errorf("after the pod left: %v (err %v), want an empty answer", gone, err)
	}
}

// A kubelet that turns slow after a good answer: the answer is served,
// with the error, until MaxStale.
func TestPodResourcesStale(t *testing.T) {
	k := &kubelet{}
	k.set(0, pod("llm", "vllm-0", dev("nvidia.com/gpu", "GPU-aaaa")))
	c := NewPodResources(PodResourcesOptions{Socket: startKubelet(t, k), TTL: 50 * time.Millisecond,
		Timeout: 50 * time.Millisecond, MaxStale: 600 * time.Millisecond})
	defer func() { _ = c.Close() }()
	ctx := context.Background()
	if _, err := c.List(ctx); err != nil {
		t.Fatal(err)
	}
	k.set(time.Second, pod("llm", "vllm-0", dev("nvidia.com/gpu", "GPU-aaaa")))
	time.Sleep(60 * time.Millisecond)
	stale, err := c.List(ctx)
	if err == nil || len(stale) != 1 {
		t.Errorf("slow kubelet after a good answer: %v, %v; want the old answer and an error", stale, err)
	}
	time.Sleep(650 * time.Millisecond)
	old, err := c.List(ctx)
	if err == nil || old != nil {
		t.Errorf("past MaxStale: %v, %v; want nothing and an error", old, err)
	}
}
