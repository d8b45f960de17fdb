package gpu

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// dcgmGPU is one GPU of a dcgm-exporter body: power in W, energy in J
// (written in mJ, as dcgm-exporter does).
type dcgmGPU struct {
	index   int
	power   float64
	energyJ float64
}

func dcgmBody(gpus ...dcgmGPU) []byte {
	var b strings.Builder
	series := func(name, typ string, v func(g dcgmGPU) string) {
		fmt.Fprintf(&b, "# TYPE %s %s\n", name, typ)
		for _, g := range gpus {
			fmt.Fprintf(&b, "%s{gpu=\"%d\",UUID=\"GPU-%d\",modelName=\"NVIDIA H100 80GB HBM3\"} %s\n", name, g.index, g.index, v(g))
		}
	}
	series("DCGM_FI_DEV_POWER_USAGE", "gauge", func(g dcgmGPU) string { return fmt.Sprint(g.power) })
	series("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "gauge", func(dcgmGPU) string { return "700" })
	series("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", func(g dcgmGPU) string { return fmt.Sprintf("%.0f", g.energyJ*1000) })
	return []byte(b.String())
}

// sample returns the value of the series name{labels} in the registry, or
// -1 when it is absent.
func sample(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metrics
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// GPU 0 of a dcgm-exporter, held by target "chat", goes through every
// misfortune its energy counter meets, one collection every 10 s; GPU 1
// (target "code") runs steadily beside it. The power limit is 700 W, so a
// step of GPU 0's counter is plausible up to 1.2 * 700 W * (window + 1 s),
// the window running from the last reading of an older counter value.
func TestManagerEnergyThroughGlitches(t *testing.T) {
	const base = 390_000_000.0 // J: a counter 390 MJ since the driver loaded
	one := func(e0 float64, present bool, e1 float64) []byte {
		if !present {
			return dcgmBody(dcgmGPU{1, 300, e1})
		}
		return dcgmBody(dcgmGPU{0, 600, e0}, dcgmGPU{1, 300, e1})
	}
	type cycle struct {
		what string
		body []byte
		// expected after the cycle: GPU 0's counter and integrated
		// totals, chat's engine energy, GPU 0's glitches by reason; -1
		// for an absent series.
		ctr, integ, chat, decrease, implausible float64
	}
	cycles := []cycle{
		{"baseline", one(base, true, 50_000), 0, -1, 0, 0, 0},
		{"steady: +3000 J", one(base+3000, true, 53_000), 3000, -1, 3000, 0, 0},
		{"GPU 0 missing from the scrape: its counter stays", one(0, false, 56_000), 3000, -1, 3000, 0, 0},
		// Back at t=30: +6000 J over the 20 s since t=10, within
		// 1.2*700*(30-0+1) = 26,040 J (window from t=0, the last
		// reading of the value before base+3000).
		{"GPU 0 back: the counter continues", one(base+9000, true, 59_000), 9000, -1, 9000, 0, 0},
		{"a 1 kJ dip: nothing added", one(base+8000, true, 62_000), 9000, -1, 9000, 1, 0},
		// From the held baseline base+9000: +3000 J.
		{"after the dip: counted from the old baseline", one(base+12_000, true, 65_000), 12_000, -1, 12_000, 1, 0},
		// 2000 J is within 1.2*700*(60-30+1) = 26,040 J of a fresh
		// start: a driver reload, its value the increase.
		{"driver reload: the new value is the increase", one(2000, true, 68_000), 14_000, -1, 14_000, 1, 0},
		// +390 MJ in 10 s: implausible; (600+600)/2 W * 10 s = 6000 J
		// integrated instead.
		{"390 MJ jump: integrated from power", one(base+2000, true, 71_000), 14_000, 6000, 20_000, 1, 1},
	}
	bodies := make([][]byte, len(cycles))
	for i, c := range cycles {
		bodies[i] = c.body
	}
	b := newTestExporter(t, serve(t, bodies...).URL+"/metrics", DCGMExporterOptions{})
	var logs strings.Builder
	m := NewManager(ManagerOptions{Backend: b, Logger: slog.New(slog.NewTextHandler(&logs, nil)), ForgetAfter: time.Minute})
	reg := registry(t, m)
	targets := []TargetInfo{{Name: "chat", GPUs: []string{"0"}}, {Name: "code", GPUs: []string{"1"}}}
	t0 := time.Unix(1_700_000_000, 0)
	gpu0 := func(extra ...string) map[string]string {
		l := map[string]string{"gpu": "0", "uuid": "GPU-0"}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	code := 0.0
	for i, c := range cycles {
		if _, err := m.Collect(context.Background(), t0.Add(time.Duration(i)*10*time.Second), targets); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		got := []float64{
			sample(t, reg, "llm_gpu_energy_joules_total", gpu0("source", "counter")),
			sample(t, reg, "llm_gpu_energy_joules_total", gpu0("source", "integrated")),
			sample(t, reg, "llm_engine_gpu_energy_joules_total", map[string]string{"target": "chat"}),
			sample(t, reg, "goodput_exporter_gpu_energy_glitches_total", gpu0("reason", GlitchDecrease)),
			sample(t, reg, "goodput_exporter_gpu_energy_glitches_total", gpu0("reason", GlitchImplausible)),
		}
		if want := []float64{c.ctr, c.integ, c.chat, c.decrease, c.implausible}; !slices.Equal(got, want) {
			t.Errorf("cycle %d, %s: counter, integrated, chat, decreases, implausible = %v, want %v", i, c.what, got, want)
		}
		// GPU 1 moves 3000 J a cycle throughout, untouched by GPU 0.
		if v := sample(t, reg, "llm_engine_gpu_energy_joules_total", map[string]string{"target": "code"}); v != code {
			t.Errorf("cycle %d: code %v J, want %v", i, v, code)
		}
		code += 3000
	}
	if v := sample(t, reg, "llm_gpu_power_watts", gpu0()); v != 600 {
		t.Errorf("GPU 0 power %v, want 600", v)
	}
	log := logs.String()
	for what, n := range map[string]int{"GPU energy reading ignored": 2, `recovered what="energy of gpu 0"`: 1, "GPU energy counter reset": 1} {
		if got := strings.Count(log, what); got != n {
			t.Errorf("%d log lines %q, want %d:\n%s", got, what, n, log)
		}
	}
}

// A GPU missing from the backend's answers keeps its energy series, and
// only its energy series, until the grace period has passed.
func TestManagerForgetsAMissingGPUAfterTheGrace(t *testing.T) {
	fake := &fakeBackend{name: "dcgm-exporter"}
	m := NewManager(ManagerOptions{Backend: fake, ForgetAfter: time.Minute})
	reg := registry(t, m)
	t0 := time.Unix(1_700_000_000, 0)
	dev := Device{Index: 0, UUID: "GPU-0", PowerW: Some(600), PowerLimitW: Some(700), EnergyJ: Some(1000)}
	fake.set([]Device{dev}, nil)
	m.Collect(context.Background(), t0, nil)
	dev.EnergyJ = Some(4000)
	fake.set([]Device{dev}, nil)
	m.Collect(context.Background(), t0.Add(10*time.Second), nil)
	fake.set(nil, nil)
	energy := map[string]string{"gpu": "0", "uuid": "GPU-0", "source": "counter"}
	for _, s := range []int{20, 30, 60, 70} { // last read at 10 s: 60 s later still kept
		m.Collect(context.Background(), t0.Add(time.Duration(s)*time.Second), nil)
		if v := sample(t, reg, "llm_gpu_energy_joules_total", energy); v != 3000 {
			t.Errorf("at %d s: energy %v, want 3000 kept", s, v)
		}
		if v := sample(t, reg, "llm_gpu_power_watts", map[string]string{"gpu": "0"}); v != -1 {
			t.Errorf("at %d s: a missing GPU's power is unknown, got %v", s, v)
		}
	}
	m.Collect(context.Background(), t0.Add(71*time.Second), nil)
	if v := sample(t, reg, "llm_gpu_energy_joules_total", energy); v != -1 {
		t.Errorf("71 s after its last reading: energy %v, want the series gone", v)
	}
	if v := sample(t, reg, "goodput_exporter_gpu_energy_glitches_total", map[string]string{"gpu": "0"}); v != -1 {
		t.Errorf("glitch counters of a forgotten GPU: %v, want gone", v)
	}
}
