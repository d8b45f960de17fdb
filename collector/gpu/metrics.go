package gpu

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput-exporter/goodput-exporter/attribution"
)

// state is what one Collect leaves for Metrics; never changed once stored.
type state struct {
	backend       string
	up            bool
	gpus          []gpuState
	absent        []gpuState // GPUs missing from this cycle's reading: energy only
	glitches      []gpuErrorCount
	enginePower   []enginePower
	engineEnergy  []engineEnergy
	gpuErrors     []gpuErrorCount
	backendErrors float64
	attrErrors    []attrErrorCount
	targetPods    map[string]PodRef
}

type gpuState struct {
	dev    Device
	energy []EnergyTotal
	shares []attribution.Share
}

type enginePower struct {
	key   engineKey
	pod   PodRef
	watts float64
}

type engineEnergy struct {
	key    engineKey
	pod    PodRef
	joules float64
}

type gpuErrorCount struct {
	gpuErrorKey
	count float64
}

type attrErrorCount struct {
	method attribution.Method
	count  float64
}

type descs struct {
	power, limit, energy, sm, smMax, throttled, util, memUsed, memTotal, info *prometheus.Desc
	enginePower, engineEnergy                                                 *prometheus.Desc
	up, gpuErrors, backendErrors, attrErrors, glitches                        *prometheus.Desc
}

const backends = "NVML, DCGM or dcgm-exporter (see goodput_exporter_gpu_backend_up)"

func newDescs() descs {
	gpu := []string{"gpu", "uuid"}
	engine := []string{"target", "namespace", "pod", "method", "split"}
	return descs{
		power: prometheus.NewDesc("llm_gpu_power_watts",
			"Board power draw of the GPU, from "+backends+".", gpu, nil),
		limit: prometheus.NewDesc("llm_gpu_power_limit_watts",
			"Power limit the driver enforces on the GPU, from "+backends+".", gpu, nil),
		energy: prometheus.NewDesc("llm_gpu_energy_joules_total",
			"Energy the GPU used since this exporter first saw it; never decreases, and stays while the GPU is missing from the backend's answers (for up to an hour). source=\"counter\": steps of the GPU's own energy counter (a driver reload counted from zero; other decreases and implausible steps, see goodput_exporter_gpu_energy_glitches_total, are not counted); source=\"integrated\": board power integrated between collections where there is no counter or its step was implausible. Sum over source for the total.",
			[]string{"gpu", "uuid", "source"}, nil),
		sm: prometheus.NewDesc("llm_gpu_sm_clock_hertz",
			"Current SM clock of the GPU, from "+backends+".", gpu, nil),
		smMax: prometheus.NewDesc("llm_gpu_sm_clock_max_hertz",
			"Maximum SM clock of the GPU, from NVML or DCGM (dcgm-exporter exports it only if DCGM_FI_DEV_MAX_SM_CLOCK is enabled).", gpu, nil),
		throttled: prometheus.NewDesc("llm_gpu_throttled",
			"1 while the GPU reports the clock-event (throttle) reason, else 0; NVML/DCGM clock event reasons, or dcgm-exporter's DCGM_EXP_CLOCK_EVENTS_COUNT/_TOTAL.",
			[]string{"gpu", "uuid", "reason"}, nil),
		util: prometheus.NewDesc("llm_gpu_utilization_ratio",
			"Fraction of the last sample period in which a kernel ran on the GPU (0..1), from "+backends+". Busy is not productive: see the engine series.", gpu, nil),
		memUsed: prometheus.NewDesc("llm_gpu_memory_used_bytes",
			"GPU memory in use, from "+backends+". Engines preallocate their KV cache, so this says little about load.", gpu, nil),
		memTotal: prometheus.NewDesc("llm_gpu_memory_total_bytes",
			"GPU memory in total, from "+backends+".", gpu, nil),
		info: prometheus.NewDesc("llm_gpu_info",
			"Always 1: the GPU's model name and the engine target (and its pod) it is attributed to; empty target when none. One series per holder of a shared GPU.",
			[]string{"gpu", "uuid", "name", "target", "pod", "namespace"}, nil),
		enginePower: prometheus.NewDesc("llm_engine_gpu_power_watts",
			"Board power of the GPUs attributed to the target, each shared GPU weighted by the target's share; method says how the GPUs were attributed, split how a shared GPU was divided (tokens, equal, or none when not shared).",
			engine, nil),
		engineEnergy: prometheus.NewDesc("llm_engine_gpu_energy_joules_total",
			"Energy of the GPUs attributed to the target since this exporter first saw it, each interval weighted by the target's share of a shared GPU (split=\"tokens\": its generation tokens; \"equal\": no holder produced tokens). Divide its rate by the generation token rate for joules per token.",
			engine, nil),
		up: prometheus.NewDesc("goodput_exporter_gpu_backend_up",
			"1 when the last GPU collection through the backend succeeded, 0 when it failed or the backend could not be opened (no NVIDIA library, or no backend configured).",
			[]string{"backend"}, nil),
		gpuErrors: prometheus.NewDesc("goodput_exporter_gpu_collection_errors_total",
			"Collections in which reading this GPU failed: reason=\"gpu_lost\" when it stopped answering (fell off the bus), \"call_failed\" when a call was refused; the other GPUs were still read.",
			[]string{"gpu", "uuid", "reason"}, nil),
		backendErrors: prometheus.NewDesc("goodput_exporter_gpu_backend_errors_total",
			"Collections in which the GPU backend failed as a whole (library call, or dcgm-exporter scrape).",
			[]string{"backend"}, nil),
		glitches: prometheus.NewDesc("goodput_exporter_gpu_energy_glitches_total",
			"Collections in which the GPU's energy reading was not used as it came: reason=\"counter_decrease\" when its energy counter went down but not to a driver-reload-sized value (nothing counted for the interval), \"implausible_increase\" when it rose by more than 1.2 x the power limit over the interval (the interval integrated from board power instead), \"invalid_reading\" for a NaN, infinite or negative power or energy reading (treated as absent).",
			[]string{"gpu", "uuid", "reason"}, nil),
		attrErrors: prometheus.NewDesc("goodput_exporter_gpu_attribution_errors_total",
			"Collections in which a GPU attribution method failed (kubelet pod-resources unreachable, a configured GPU missing, /proc unreadable).",
			[]string{"method"}, nil),
	}
}

// Describe sends every descriptor Metrics may use.
func (m *Manager) Describe(ch chan<- *prometheus.Desc) {
	d := m.descs
	for _, desc := range []*prometheus.Desc{d.power, d.limit, d.energy, d.sm, d.smMax, d.throttled, d.util, d.memUsed,
		d.memTotal, d.info, d.enginePower, d.engineEnergy, d.up, d.gpuErrors, d.backendErrors, d.attrErrors, d.glitches} {
		ch <- desc
	}
}

// Metrics sends the latest state as const metrics. It never waits on a
// GPU: it renders what the last Collect stored.
func (m *Manager) Metrics(ch chan<- prometheus.Metric) {
	m.mu.RLock()
	st := m.latest
	m.mu.RUnlock()
	d := m.descs

	ch <- prometheus.MustNewConstMetric(d.up, prometheus.GaugeValue, b2f(st.up), st.backend)
	ch <- prometheus.MustNewConstMetric(d.backendErrors, prometheus.CounterValue, st.backendErrors, st.backend)
	for _, g := range st.gpus {
		dev := &g.dev
		idx := strconv.Itoa(dev.Index)
		gauge := func(desc *prometheus.Desc, v Value) {
			if v.OK {
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v.V, idx, dev.UUID)
			}
		}
		gauge(d.power, dev.PowerW)
		gauge(d.limit, dev.PowerLimitW)
		gauge(d.sm, dev.SMClockHz)
		gauge(d.smMax, dev.SMClockMaxHz)
		gauge(d.util, dev.Utilization)
		gauge(d.memUsed, dev.MemUsedB)
		gauge(d.memTotal, dev.MemTotalB)
		for _, e := range g.energy {
			ch <- prometheus.MustNewConstMetric(d.energy, prometheus.CounterValue, e.Joules, idx, dev.UUID, string(e.Source))
		}
		if dev.Throttle.OK {
			for _, r := range KnownReasons() {
				ch <- prometheus.MustNewConstMetric(d.throttled, prometheus.GaugeValue, b2f(dev.Throttle.Mask&r.Bit != 0), idx, dev.UUID, r.Name)
			}
		}
		m.info(ch, st, g, idx)
	}
	for _, g := range st.absent {
		for _, e := range g.energy {
			ch <- prometheus.MustNewConstMetric(d.energy, prometheus.CounterValue, e.Joules, strconv.Itoa(g.dev.Index), g.dev.UUID, string(e.Source))
		}
	}
	for _, e := range st.glitches {
		ch <- prometheus.MustNewConstMetric(d.glitches, prometheus.CounterValue, e.count, e.gpu, e.uuid, e.reason)
	}
	for _, e := range st.enginePower {
		ch <- prometheus.MustNewConstMetric(d.enginePower, prometheus.GaugeValue, e.watts, engineLabels(e.key, e.pod)...)
	}
	for _, e := range st.engineEnergy {
		ch <- prometheus.MustNewConstMetric(d.engineEnergy, prometheus.CounterValue, e.joules, engineLabels(e.key, e.pod)...)
	}
	for _, e := range st.gpuErrors {
		ch <- prometheus.MustNewConstMetric(d.gpuErrors, prometheus.CounterValue, e.count, e.gpu, e.uuid, e.reason)
	}
	for _, e := range st.attrErrors {
		ch <- prometheus.MustNewConstMetric(d.attrErrors, prometheus.CounterValue, e.count, string(e.method))
	}
}

// info sends llm_gpu_info: one series per holder, or per pod the backend
// reports on an unattributed GPU, or one with empty target.
func (m *Manager) info(ch chan<- prometheus.Metric, st *state, g gpuState, idx string) {
	dev := &g.dev
	send := func(target string, pod PodRef) {
		ch <- prometheus.MustNewConstMetric(m.descs.info, prometheus.GaugeValue, 1, idx, dev.UUID, dev.Name, target, pod.Pod, pod.Namespace)
	}
	switch {
	case len(g.shares) > 0:
		for _, s := range g.shares {
			send(s.Target, st.targetPods[s.Target])
		}
	case len(dev.Pods) > 0:
		for _, p := range dev.Pods {
			send("", PodRef{Namespace: p.Namespace, Pod: p.Pod})
		}
	default:
		send("", PodRef{})
	}
}

func engineLabels(k engineKey, pod PodRef) []string {
	return []string{k.target, pod.Namespace, pod.Pod, string(k.method), string(k.split)}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
