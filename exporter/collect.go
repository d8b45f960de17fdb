package exporter

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput-exporter/goodput-exporter/collector"
)

// engineCollector emits every target's latest state as const metrics.
// It describes nothing up front: the series depend on what each engine
// exposes, so the registry treats it as unchecked.
type engineCollector Exporter

func (c *engineCollector) Describe(chan<- *prometheus.Desc) {}

func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	e := (*Exporter)(c)
	cfg := e.config()
	sloConfigMetrics(cfg.GoodputSLOs(), ch)
	targets := e.sortedTargets()
	var buf []prometheus.Metric
	for _, t := range targets {
		buf = t.metrics(buf[:0])
		for _, m := range buf {
			ch <- m
		}
		e.costMetric(cfg, t, len(targets), ch)
	}
	if e.opts.GPU != nil {
		e.opts.GPU.Metrics(ch)
	}
}

// metrics builds the target's series under its lock, so that the channel
// sends (which wait on the registry) happen without it.
func (t *target) metrics(out []prometheus.Metric) []prometheus.Metric {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &t.state
	if !st.attempted {
		return out
	}
	engine := string(st.engine)
	if engine == "" {
		engine = "unknown"
	}
	up := 0.0
	if st.up {
		up = 1
	}
	out = append(out, collector.Metric(t.descs.Up, prometheus.GaugeValue, up, engine))
	if st.up && st.snap != nil {
		out = t.descs.Append(out, st.snap)
	}
	// Goodput counters are the daemon's own and never reset, so they stay
	// while the engine is down: rate() over them remains continuous.
	out = t.sloD.metrics(t.tracker, st.engine, out)
	return t.exactMetrics(st.engine, out)
}
