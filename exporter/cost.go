package exporter

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/goodput"
)

func newCostDesc(cl prometheus.Labels) *prometheus.Desc {
	return prometheus.NewDesc("llm_engine_hourly_cost",
		"Hourly price of the GPUs the engine holds, from the configured pricing. basis=\"gpus\": its GPU count (configured gpus: or attributed); basis=\"node_share\": the node price split evenly between the node's targets, used when the engine's GPUs are unknown.",
		[]string{"currency", "basis"}, cl)
}

// costSeries sends llm_engine_hourly_cost for a target, or nothing when the
// price cannot be known (no pricing, or a per-GPU price and no GPU count).
func (e *Exporter) costSeries(cfg *config.Config, t *target, ntargets int, s collector.Sink) {
	if cfg.Pricing == nil {
		return
	}
	p := cfg.Pricing.Goodput()
	gpus := len(t.cfg.GPUs)
	t.mu.Lock()
	attributed := t.gpu
	t.mu.Unlock()
	var cost float64
	var basis string
	switch {
	case attributed.ok:
		// Linear in the GPU count, so a fractional share (a GPU split
		// between targets) is priced by the price of one.
		one, err := goodput.HourlyCost(p, 1)
		if err != nil {
			e.warnOnce("cost/"+t.cfg.Name, "no hourly cost for target", "target", t.cfg.Name, "err", err)
			return
		}
		cost, basis = one*attributed.gpus, "gpus"
	case gpus > 0:
		c, err := goodput.HourlyCost(p, gpus)
		if err != nil {
			e.warnOnce("cost/"+t.cfg.Name, "no hourly cost for target", "target", t.cfg.Name, "err", err)
			return
		}
		cost, basis = c, "gpus"
	case p.PerNodeHour > 0 && ntargets > 0:
		cost, basis = p.PerNodeHour/float64(ntargets), "node_share"
	default:
		e.warnOnce("cost/"+t.cfg.Name, "no hourly cost for target: pricing is per GPU-hour but its GPUs are unknown (set gpus: on the target)", "target", t.cfg.Name)
		return
	}
	s.Sample(t.costD, prometheus.GaugeValue, cost, collector.Labels(cfg.Pricing.Currency, basis))
}
