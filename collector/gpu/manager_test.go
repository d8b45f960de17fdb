package gpu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// collector adapts a Manager the way the exporter does.
type collector struct{ m *Manager }

func (c collector) Describe(ch chan<- *prometheus.Desc) { c.m.Describe(ch) }
func (c collector) Collect(ch chan<- prometheus.Metric) { c.m.Metrics(ch) }

func registry(t *testing.T, m *Manager) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector{m})
	return reg
}

// Three GPUs: 0 with an energy counter, configured for "chat"; 1 without a
// counter, shared by the pods of "code-a" and "code-b" (dcgm-exporter
// reports both); 2 attributed to nobody, lost in the second cycle.
func cycle1() []Device {
	return []Device{
		{Index: 0, UUID: "GPU-a", Name: "NVIDIA H100 80GB HBM3", PowerW: Some(600), PowerLimitW: Some(700), EnergyJ: Some(1000),
			SMClockHz: Some(1.98e9), SMClockMaxHz: Some(1.98e9), Throttle: Reasons{Mask: 0x4, OK: true}, Utilization: Some(1),
			MemUsedB: Some(75e9), MemTotalB: Some(80e9)},
		{Index: 1, UUID: "GPU-b", Name: "NVIDIA L4", PowerW: Some(200), Pods: []PodRef{{Namespace: "llm", Pod: "code-a-0"}, {Namespace: "llm", Pod: "code-b-0"}}},
		{Index: 2, UUID: "GPU-c", Name: "NVIDIA L4", PowerW: Some(50)},
	}
}

func cycle2() []Device {
	d := cycle1()
	d[0].EnergyJ = Some(4000)
	d[1].PowerW = Some(400)
	d[2] = Device{Index: 2, Err: fmt.Errorf("nvmlDeviceGetHandleByIndex: %w", ErrGPULost)}
	return d
}

func targets() []TargetInfo {
	return []TargetInfo{
		{Name: "chat", GPUs: []string{"0"}, GenerationTokens: 50},
		{Name: "code-a", Namespace: "llm", Pod: "code-a-0", GenerationTokens: 300},
		{Name: "code-b", Namespace: "llm", Pod: "code-b-0", GenerationTokens: 100},
	}
}

func TestManagerTwoCycles(t *testing.T) {
	fake := &fakeBackend{name: "nvml"}
	m := NewManager(ManagerOptions{Backend: fake})
	t0 := time.Unix(1_700_000_000, 0)
	ctx := context.Background()

	fake.set(cycle1(), nil)
	if _, err := m.Collect(ctx, t0, targets()); err != nil {
		t.Fatal(err)
	}
	fake.set(cycle2(), nil)
	usage, err := m.Collect(ctx, t0.Add(10*time.Second), targets())
	if err != nil {
		t.Fatal(err)
	}
	// GPU 0: counter 1000 -> 4000 J. GPU 1: (200+400)/2 W * 10 s = 3000 J,
	// split 300:100 tokens; held half each whatever the tokens.
	want := []TargetUsage{
		{Target: "chat", GPUs: 1, HeldGPUs: 1, PowerW: 600, EnergyJ: 3000, EnergyOK: true},
		{Target: "code-a", GPUs: 0.75, HeldGPUs: 0.5, PowerW: 300, EnergyJ: 2250, EnergyOK: true},
		{Target: "code-b", GPUs: 0.25, HeldGPUs: 0.5, PowerW: 100, EnergyJ: 750, EnergyOK: true},
	}
	if fmt.Sprint(usage) != fmt.Sprint(want) {
		t.Errorf("usage:\n got %+v\nwant %+v", usage, want)
	}

	reg := registry(t, m)
	expected := `
# HELP goodput_exporter_gpu_backend_up 1 when the last GPU collection through the backend succeeded, 0 when it failed or the backend could not be opened (no NVIDIA library, or no backend configured).
# TYPE goodput_exporter_gpu_backend_up gauge
goodput_exporter_gpu_backend_up{backend="nvml"} 1
# HELP goodput_exporter_gpu_collection_errors_total Collections in which reading this GPU failed: reason="gpu_lost" when it stopped answering (fell off the bus), "call_failed" when a call was refused; the other GPUs were still read.
# TYPE goodput_exporter_gpu_collection_errors_total counter
goodput_exporter_gpu_collection_errors_total{gpu="2",reason="gpu_lost",uuid="GPU-c"} 1
# HELP llm_engine_gpu_energy_joules_total Energy of the GPUs attributed to the target since this exporter first saw it, each interval weighted by the target's share of a shared GPU (split="tokens": its generation tokens; "equal": no holder produced tokens). Divide its rate by the generation token rate for joules per token.
# TYPE llm_engine_gpu_energy_joules_total counter
llm_engine_gpu_energy_joules_total{method="config",namespace="",pod="",split="none",target="chat"} 3000
llm_engine_gpu_energy_joules_total{method="pod-resources",namespace="llm",pod="code-a-0",split="tokens",target="code-a"} 2250
llm_engine_gpu_energy_joules_total{method="pod-resources",namespace="llm",pod="code-b-0",split="tokens",target="code-b"} 750
# HELP llm_engine_gpu_power_watts Board power of the GPUs attributed to the target, each shared GPU weighted by the target's share; method says how the GPUs were attributed, split how a shared GPU was divided (tokens, equal, or none when not shared).
# TYPE llm_engine_gpu_power_watts gauge
llm_engine_gpu_power_watts{method="config",namespace="",pod="",split="none",target="chat"} 600
llm_engine_gpu_power_watts{method="pod-resources",namespace="llm",pod="code-a-0",split="tokens",target="code-a"} 300
llm_engine_gpu_power_watts{method="pod-resources",namespace="llm",pod="code-b-0",split="tokens",target="code-b"} 100
# HELP llm_gpu_energy_joules_total Energy the GPU used since this exporter first saw it; never decreases, and stays while the GPU is missing from the backend's answers (for up to an hour). source="counter": steps of the GPU's own energy counter (a driver reload counted from zero; other decreases and implausible steps, see goodput_exporter_gpu_energy_glitches_total, are not counted); source="integrated": board power integrated between collections where there is no counter or its step was implausible. Sum over source for the total.
# TYPE llm_gpu_energy_joules_total counter
llm_gpu_energy_joules_total{gpu="0",source="counter",uuid="GPU-a"} 3000
llm_gpu_energy_joules_total{gpu="1",source="integrated",uuid="GPU-b"} 3000
llm_gpu_energy_joules_total{gpu="2",source="integrated",uuid="GPU-c"} 0
# HELP llm_gpu_info Always 1: the GPU's model name and the engine target (and its pod) it is attributed to; empty target when none. One series per holder of a shared GPU.
# TYPE llm_gpu_info gauge
llm_gpu_info{gpu="0",name="NVIDIA H100 80GB HBM3",namespace="",pod="",target="chat",uuid="GPU-a"} 1
llm_gpu_info{gpu="1",name="NVIDIA L4",namespace="llm",pod="code-a-0",target="code-a",uuid="GPU-b"} 1
llm_gpu_info{gpu="1",name="NVIDIA L4",namespace="llm",pod="code-b-0",target="code-b",uuid="GPU-b"} 1
llm_gpu_info{gpu="2",name="NVIDIA L4",namespace="",pod="",target="",uuid="GPU-c"} 1
# HELP llm_gpu_power_watts Board power draw of the GPU, from NVML, DCGM or dcgm-exporter (see goodput_exporter_gpu_backend_up).
# TYPE llm_gpu_power_watts gauge
llm_gpu_power_watts{gpu="0",uuid="GPU-a"} 600
llm_gpu_power_watts{gpu="1",uuid="GPU-b"} 400
# HELP llm_gpu_throttled 1 while the GPU reports the clock-event (throttle) reason, else 0; NVML/DCGM clock event reasons, or dcgm-exporter's DCGM_EXP_CLOCK_EVENTS_COUNT/_TOTAL.
# TYPE llm_gpu_throttled gauge
llm_gpu_throttled{gpu="0",reason="applications_clocks_setting",uuid="GPU-a"} 0
llm_gpu_throttled{gpu="0",reason="display_clocks_setting",uuid="GPU-a"} 0
llm_gpu_throttled{gpu="0",reason="gpu_idle",uuid="GPU-a"} 0
llm_gpu_throttled{gpu="0",reason="hw_power_brake_slowdown",uuid="GPU-a"} 0
llm_gpu_throttled{gpu="0",reason="hw_slowdown",uuid="GPU-a"} 0
llm_gpu_throttled{gpu="0",reason="hw_thermal_slowdown",uuid="GPU-a"} 0
llm_gpu_throttled{gpu="0",reason="sw_power_cap",uuid="GPU-a"} 1
llm_gpu_throttled{gpu="0",reason="sw_thermal_slowdown",uuid="GPU-a"} 0
llm_gpu_throttled{gpu="0",reason="sync_boost",uuid="GPU-a"} 0
`
	names := []string{"goodput_exporter_gpu_backend_up", "goodput_exporter_gpu_collection_errors_total",
		"llm_engine_gpu_energy_joules_total", "llm_engine_gpu_power_watts", "llm_gpu_energy_joules_total",
		"llm_gpu_info", "llm_gpu_power_watts", "llm_gpu_throttled"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expected), names...); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(collector{m})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// No library: the Manager still answers, with backend_up 0 for the backend
// that was asked for, and no GPU series.
func TestManagerWithoutBackend(t *testing.T) {
	m := NewManager(ManagerOptions{BackendName: "nvml"})
	usage, err := m.Collect(context.Background(), time.Now(), targets())
	if err != nil || len(usage) != 3 || usage[0].GPUs != 0 || usage[0].EnergyOK {
		t.Fatalf("usage %+v, err %v", usage, err)
	}
	want := `
# HELP goodput_exporter_gpu_backend_up 1 when the last GPU collection through the backend succeeded, 0 when it failed or the backend could not be opened (no NVIDIA library, or no backend configured).
# TYPE goodput_exporter_gpu_backend_up gauge
goodput_exporter_gpu_backend_up{backend="nvml"} 0
`
	if err := testutil.GatherAndCompare(registry(t, m), strings.NewReader(want), "goodput_exporter_gpu_backend_up", "llm_gpu_power_watts"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(collector{m}); n != 2 {
		t.Errorf("%d series without a backend, want 2 (up and backend errors)", n)
	}
}

// A failing backend: up 0, the failure counted and returned, gauges gone,
// running energy kept; the next good cycle resumes.
func TestManagerBackendFailure(t *testing.T) {
	fake := &fakeBackend{name: "dcgm-exporter"}
	m := NewManager(ManagerOptions{Backend: fake})
	t0 := time.Unix(1_700_000_000, 0)
	ctx := context.Background()
	fake.set(cycle1(), nil)
	if _, err := m.Collect(ctx, t0, targets()); err != nil {
		t.Fatal(err)
	}
	fake.set(cycle2(), nil)
	if _, err := m.Collect(ctx, t0.Add(10*time.Second), targets()); err != nil {
		t.Fatal(err)
	}
	down := errors.New("dcgm-exporter: connection refused")
	fake.set(nil, down)
	usage, err := m.Collect(ctx, t0.Add(20*time.Second), targets())
	if !errors.Is(err, down) || usage[0].EnergyOK || usage[0].GPUs != 0 {
		t.Errorf("failed cycle: usage %+v err %v", usage, err)
	}
	reg := registry(t, m)
	want := `
# HELP goodput_exporter_gpu_backend_errors_total Collections in which the GPU backend failed as a whole (library call, or dcgm-exporter scrape).
# TYPE goodput_exporter_gpu_backend_errors_total counter
goodput_exporter_gpu_backend_errors_total{backend="dcgm-exporter"} 1
# HELP goodput_exporter_gpu_backend_up 1 when the last GPU collection through the backend succeeded, 0 when it failed or the backend could not be opened (no NVIDIA library, or no backend configured).
# TYPE goodput_exporter_gpu_backend_up gauge
goodput_exporter_gpu_backend_up{backend="dcgm-exporter"} 0
# HELP llm_engine_gpu_energy_joules_total Energy of the GPUs attributed to the target since this exporter first saw it, each interval weighted by the target's share of a shared GPU (split="tokens": its generation tokens; "equal": no holder produced tokens). Divide its rate by the generation token rate for joules per token.
# TYPE llm_engine_gpu_energy_joules_total counter
llm_engine_gpu_energy_joules_total{method="config",namespace="",pod="",split="none",target="chat"} 3000
llm_engine_gpu_energy_joules_total{method="pod-resources",namespace="llm",pod="code-a-0",split="tokens",target="code-a"} 2250
llm_engine_gpu_energy_joules_total{method="pod-resources",namespace="llm",pod="code-b-0",split="tokens",target="code-b"} 750
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "goodput_exporter_gpu_backend_errors_total",
		"goodput_exporter_gpu_backend_up", "llm_engine_gpu_energy_joules_total", "llm_gpu_power_watts"); err != nil {
		t.Error(err)
	}

	// Back: GPU 0's counter moved on by 500 J over the gap.
	d := cycle2()
	d[0].EnergyJ = Some(4500)
	fake.set(d, nil)
	usage, err = m.Collect(ctx, t0.Add(30*time.Second), targets())
	if err != nil || usage[0].EnergyJ != 500 {
		t.Errorf("recovered cycle: usage %+v err %v, want chat +500 J", usage, err)
	}
}

// A target that goes away takes its engine series with it.
func TestManagerDropsGoneTargets(t *testing.T) {
	fake := &fakeBackend{name: "nvml"}
	m := NewManager(ManagerOptions{Backend: fake})
	fake.set(cycle1(), nil)
	t0 := time.Unix(1_700_000_000, 0)
	if _, err := m.Collect(context.Background(), t0, targets()); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Collect(context.Background(), t0.Add(time.Second), targets()[:1]); err != nil {
		t.Fatal(err)
	}
	count := testutil.CollectAndCount(collector{m}, "llm_engine_gpu_energy_joules_total")
	if count != 1 {
		t.Errorf("%d engine energy series after two targets left, want 1", count)
	}
}

// A failure that persists is one log line and one count per cycle; its
// end is one more line.
func TestManagerLogsChangesOnce(t *testing.T) {
	var buf strings.Builder
	fake := &fakeBackend{name: "nvml"}
	m := NewManager(ManagerOptions{Backend: fake, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	t0 := time.Unix(1_700_000_000, 0)
	ghost := append(targets(), TargetInfo{Name: "ghost", GPUs: []string{"GPU-zzzz", "9"}})
	fake.set(cycle2(), nil)
	for i := range 3 {
		if _, err := m.Collect(context.Background(), t0.Add(time.Duration(i)*time.Second), ghost); err != nil {
			t.Fatal(err)
		}
	}
	fake.set(cycle1(), nil)
	if _, err := m.Collect(context.Background(), t0.Add(5*time.Second), targets()); err != nil {
		t.Fatal(err)
	}
	log := buf.String()
	if n := strings.Count(log, "GPU reading failed"); n != 1 {
		t.Errorf("%d warnings for a GPU lost three cycles running, want 1:\n%s", n, log)
	}
	if n := strings.Count(log, "GPU attribution failed"); n != 1 || !strings.Contains(log, "GPU-zzzz") || !strings.Contains(log, `\"9\"`) {
		t.Errorf("want one attribution warning naming both missing GPUs:\n%s", log)
	}
	if n := strings.Count(log, "recovered"); n != 2 {
		t.Errorf("%d recoveries logged, want 2 (GPU 2 and config):\n%s", n, log)
	}
	want := `
# HELP goodput_exporter_gpu_attribution_errors_total Collections in which a GPU attribution method failed (kubelet pod-resources unreachable, a configured GPU missing, /proc unreadable).
# TYPE goodput_exporter_gpu_attribution_errors_total counter
goodput_exporter_gpu_attribution_errors_total{method="config"} 3
`
	if err := testutil.GatherAndCompare(registry(t, m), strings.NewReader(want), "goodput_exporter_gpu_attribution_errors_total"); err != nil {
		t.Error(err)
	}
}
