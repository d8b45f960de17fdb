package gpu

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// dcgmExporterClockEvents maps dcgm-exporter's clock_event label values
// (internal/pkg/collector/clock_events_collector.go) to NVML's bits.
func dcgmExporterClockEvents() map[string]uint64 {
	return map[string]uint64{
		"gpu_idle":       0x1,
		"clocks_setting": 0x2,
		"power_cap":      0x4,
		"hw_slowdown":    0x8,
		"sync_boost":     0x10,
		"sw_thermal":     0x20,
		"hw_thermal":     0x40,
		"hw_power_brake": 0x80,
		"display_clocks": 0x100,
	}
}

// exporterScrape is one parsed dcgm-exporter body. ClockTotals holds the
// cumulative DCGM_EXP_CLOCK_EVENTS_TOTAL per GPU key and bit; turning it
// into active reasons needs the previous scrape.
type exporterScrape struct {
	Devices     []Device
	ClockTotals map[string]map[uint64]float64
}

// gpuAccum gathers one GPU's series; MIG instances repeat device-level
// fields, so the first value seen for a field wins.
type gpuAccum struct {
	dev                   Device
	fbUsed, fbFree, fbRes Value
	fbTotal               Value
	mgmtLimit             Value
}

// parseDCGMExporter reads a dcgm-exporter /metrics body (text format).
// It accepts every label spelling dcgm-exporter has used: Hostname or
// hostname (ignored either way), UUID or uuid, pod/namespace/container or
// pod_name/pod_namespace/container_name.
func parseDCGMExporter(r io.Reader) (exporterScrape, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return exporterScrape{}, fmt.Errorf("parse dcgm-exporter metrics: %w", err)
	}
	gpus := map[string]*gpuAccum{}
	out := exporterScrape{ClockTotals: map[string]map[uint64]float64{}}
	events := dcgmExporterClockEvents()
	setters := exporterSetters()
	for name, fam := range fams {
		setter, known := setters[name]
		if !known && name != "DCGM_EXP_CLOCK_EVENTS_COUNT" && name != "DCGM_EXP_CLOCK_EVENTS_TOTAL" {
			continue
		}
		for _, m := range fam.GetMetric() {
			labels := labelMap(m)
			g, err := accumFor(gpus, labels)
			if err != nil {
				return exporterScrape{}, fmt.Errorf("%s: %w", name, err)
			}
			v := sampleValue(m)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				// No reading, not a value: NaN power would poison the
				// integrated energy for good.
				continue
			}
			d := &g.dev
			bit := events[labels["clock_event"]]
			switch {
			case known:
				first(setter(g), exporterValue(name, v))
			case name == "DCGM_EXP_CLOCK_EVENTS_COUNT":
				// Not a running count despite its TYPE: the number of samples
				// in the last window_size_in_ms that had the reason set
				// (expcollector.go), so a reason is active while it is > 0.
				d.Throttle.OK = true
				if bit != 0 && v > 0 {
					d.Throttle.Mask |= bit
				}
			case bit != 0: // DCGM_EXP_CLOCK_EVENTS_TOTAL
				key := d.Key()
				if out.ClockTotals[key] == nil {
					out.ClockTotals[key] = map[uint64]float64{}
				}
				out.ClockTotals[key][bit] = v
			}
			addPod(d, labels)
		}
	}
	for _, g := range gpus {
		d := g.finish()
		// Pods come in the order their families were met, which is map
		// order: sort them so that one body always reads the same.
		slices.SortFunc(d.Pods, func(a, b PodRef) int {
			return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod),
				cmp.Compare(a.Container, b.Container), cmp.Compare(a.MIGInstance, b.MIGInstance))
		})
		out.Devices = append(out.Devices, d)
	}
	slices.SortFunc(out.Devices, func(a, b Device) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.UUID, b.UUID))
	})
	return out, nil
}

// exporterSetters says which reading each dcgm-exporter gauge fills.
func exporterSetters() map[string]func(*gpuAccum) *Value {
	return map[string]func(*gpuAccum) *Value{
		"DCGM_FI_DEV_POWER_USAGE":              func(g *gpuAccum) *Value { return &g.dev.PowerW },
		"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": func(g *gpuAccum) *Value { return &g.dev.EnergyJ },
		"DCGM_FI_DEV_ENFORCED_POWER_LIMIT":     func(g *gpuAccum) *Value { return &g.dev.PowerLimitW },
		"DCGM_FI_DEV_POWER_MGMT_LIMIT":         func(g *gpuAccum) *Value { return &g.mgmtLimit },
		"DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF":     func(g *gpuAccum) *Value { return &g.dev.PowerLimitDefaultW },
		"DCGM_FI_DEV_SM_CLOCK":                 func(g *gpuAccum) *Value { return &g.dev.SMClockHz },
		"DCGM_FI_DEV_MAX_SM_CLOCK":             func(g *gpuAccum) *Value { return &g.dev.SMClockMaxHz },
		"DCGM_FI_DEV_GPU_UTIL":                 func(g *gpuAccum) *Value { return &g.dev.Utilization },
		"DCGM_FI_DEV_FB_USED":                  func(g *gpuAccum) *Value { return &g.fbUsed },
		"DCGM_FI_DEV_FB_FREE":                  func(g *gpuAccum) *Value { return &g.fbFree },
		"DCGM_FI_DEV_FB_RESERVED":              func(g *gpuAccum) *Value { return &g.fbRes },
		"DCGM_FI_DEV_FB_TOTAL":                 func(g *gpuAccum) *Value { return &g.fbTotal },
	}
}

// exporterValue converts a dcgm-exporter value to base units; dividing
// keeps whole millijoules and percent exact.
func exporterValue(name string, v float64) float64 {
	switch name {
	case "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION":
		return v / 1e3 // mJ
	case "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MAX_SM_CLOCK":
		return v * 1e6 // MHz
	case "DCGM_FI_DEV_GPU_UTIL":
		return v / 100 // %
	case "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED", "DCGM_FI_DEV_FB_TOTAL":
		return v * mib
	}
	return v
}

// accumFor finds or starts the GPU a series belongs to.
func accumFor(gpus map[string]*gpuAccum, labels map[string]string) (*gpuAccum, error) {
	idx, err := strconv.Atoi(labels["gpu"])
	if err != nil || idx < 0 {
		return nil, fmt.Errorf("series without a numeric gpu label: %v", labels)
	}
	uuid := cmp.Or(labels["UUID"], labels["uuid"])
	d := Device{Index: idx, UUID: uuid, Name: labels["modelName"]}
	if g, ok := gpus[d.Key()]; ok {
		// Families come in map order: of the model names one GPU's series
		// carry (normally one), keep the smallest, so that the same body
		// always names it the same.
		if n := d.Name; n != "" && (g.dev.Name == "" || n < g.dev.Name) {
			g.dev.Name = n
		}
		return g, nil
	}
	g := &gpuAccum{dev: d}
	gpus[d.Key()] = g
	return g, nil
}

func (g *gpuAccum) finish() Device {
	d := g.dev
	if !d.PowerLimitW.OK {
		d.PowerLimitW = g.mgmtLimit
	}
	d.MemUsedB = g.fbUsed
	switch {
	case g.fbTotal.OK:
		d.MemTotalB = g.fbTotal
	case g.fbUsed.OK && g.fbFree.OK:
		// DCGM's total is used + free + reserved (an L4 reads
		// 0 + 22563 + 470 = 23033 MiB, nvidia-smi's figure).
		d.MemTotalB = Some(g.fbUsed.V + g.fbFree.V + g.fbRes.V)
	}
	return d
}

// addPod keeps the pod dcgm-exporter's Kubernetes mapper put on a series.
// 2.x printed empty pod labels on every series; those are no pod.
func addPod(d *Device, labels map[string]string) {
	ref := PodRef{
		Namespace:   cmp.Or(labels["namespace"], labels["pod_namespace"]),
		Pod:         cmp.Or(labels["pod"], labels["pod_name"]),
		Container:   cmp.Or(labels["container"], labels["container_name"]),
		MIGInstance: labels["GPU_I_ID"],
	}
	if ref.Pod == "" || slices.Contains(d.Pods, ref) {
		return
	}
	d.Pods = append(d.Pods, ref)
}

func first(dst *Value, v float64) {
	if !dst.OK {
		*dst = Some(v)
	}
}

func labelMap(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// sampleValue reads a gauge, counter or untyped sample (excerpts without a
// TYPE line parse as untyped).
func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}
