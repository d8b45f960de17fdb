package gpu

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput-exporter/goodput-exporter/attribution"
)

// benchBackend is an 8-GPU node whose counters advance on each read: GPUs
// 0-3 have an energy counter, 4-7 are integrated from power.
type benchBackend struct {
	devs []Device
}

func newBenchBackend() *benchBackend {
	b := &benchBackend{}
	for i := range 8 {
		d := Device{Index: i, UUID: fmt.Sprintf("GPU-%04d", i), Name: "NVIDIA H200", PowerW: Some(500), PowerLimitW: Some(700),
			SMClockHz: Some(1.98e9), SMClockMaxHz: Some(1.98e9), Throttle: Reasons{OK: true}, Utilization: Some(0.9),
			MemUsedB: Some(130e9), MemTotalB: Some(141e9), PIDs: []int{1000 + i}, PIDsOK: true}
		if i < 4 {
			d.EnergyJ = Some(1e6)
		}
		b.devs = append(b.devs, d)
	}
	return b
}

func (b *benchBackend) Name() string { return "nvml" }
func (b *benchBackend) Close() error { return nil }
func (b *benchBackend) Collect(context.Context) ([]Device, error) {
	out := make([]Device, len(b.devs))
	for i := range b.devs {
		if b.devs[i].EnergyJ.OK {
			b.devs[i].EnergyJ.V += 2500
		}
		out[i] = b.devs[i]
	}
	return out, nil
}

type benchPods struct{ pods []attribution.PodDevices }

func (p benchPods) List(context.Context) ([]attribution.PodDevices, error) { return p.pods, nil }

// benchNode is an 8-GPU node: two targets by config, three by
// pod-resources, GPU 6 shared by tokens.
func benchNode() (*Manager, []TargetInfo) {
	pods := benchPods{pods: []attribution.PodDevices{
		{Namespace: "llm", Pod: "p-0", Resource: "nvidia.com/gpu", DeviceIDs: []string{"GPU-0004", "GPU-0005"}},
		{Namespace: "llm", Pod: "p-1", Resource: "nvidia.com/gpu.shared", DeviceIDs: []string{"GPU-0006::0"}},
		{Namespace: "llm", Pod: "p-2", Resource: "nvidia.com/gpu.shared", DeviceIDs: []string{"GPU-0006::1", "GPU-0007"}},
	}}
	m := NewManager(ManagerOptions{Backend: newBenchBackend(), Attributor: attribution.New(attribution.Options{Pods: pods})})
	targets := []TargetInfo{
		{Name: "a", GPUs: []string{"0", "1"}, GenerationTokens: 1000},
		{Name: "b", GPUs: []string{"GPU-0002", "GPU-0003"}, GenerationTokens: 800},
		{Name: "c", Namespace: "llm", Pod: "p-0", GenerationTokens: 500},
		{Name: "d", Namespace: "llm", Pod: "p-1", GenerationTokens: 300},
		{Name: "e", Namespace: "llm", Pod: "p-2", GenerationTokens: 100},
	}
	return m, targets
}

// The benchmark measures the cycle it claims to: every GPU attributed,
// energy flowing.
func TestBenchNode(t *testing.T) {
	m, targets := benchNode()
	now := time.Unix(1_700_000_000, 0)
	var usage []TargetUsage
	for i := range 2 {
		var err error
		if usage, err = m.Collect(context.Background(), now.Add(time.Duration(i)*5*time.Second), targets); err != nil {
			t.Fatal(err)
		}
	}
	// GPUs 0-3: 2500 J per cycle from the counter; 4-7: 500 W * 5 s.
	want := "[{a 2 2 1000 5000 true} {b 2 2 1000 5000 true} {c 2 2 1000 5000 true} {d 0.75 0.5 375 1875 true} {e 1.25 1.5 625 3125 true}]"
	if got := fmt.Sprint(usage); got != want {
		t.Errorf("usage %s, want %s", got, want)
	}
}

// BenchmarkManagerCollect is one collection cycle on benchNode: read,
// energy for every GPU, attribution and the state swap.
func BenchmarkManagerCollect(b *testing.B) {
	m, targets := benchNode()
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(5 * time.Second)
		if _, err := m.Collect(ctx, now, targets); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkManagerMetrics renders the state of that node once.
func BenchmarkManagerMetrics(b *testing.B) {
	m := NewManager(ManagerOptions{Backend: newBenchBackend()})
	targets := []TargetInfo{{Name: "a", GPUs: []string{"0", "1", "2", "3", "4", "5", "6", "7"}, GenerationTokens: 1}}
	now := time.Unix(1_700_000_000, 0)
	for range 2 {
		now = now.Add(5 * time.Second)
		if _, err := m.Collect(context.Background(), now, targets); err != nil {
			b.Fatal(err)
		}
	}
	ch := make(chan prometheus.Metric, 256)
	b.ReportAllocs()
	for b.Loop() {
		m.Metrics(ch)
		for len(ch) > 0 {
			<-ch
		}
	}
}
