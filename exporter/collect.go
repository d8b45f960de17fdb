package exporter

import (
	"github.com/prometheus/client_golang/prometheus"
)

// engineCollector emits every target's latest state as const metrics.
// It describes nothing up front: the series depend on what each engine
// exposes, so the registry treats it as unchecked.
type engineCollector Exporter

func (c *engineCollector) Describe(chan<- *prometheus.Desc) {}

func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	e := (*Exporter)(c)
	for _, t := range e.sortedTargets() {
		st := t.snapshotState()
		if !st.attempted {
			continue
		}
		engine := string(st.engine)
		if engine == "" {
			engine = "unknown"
		}
		up := 0.0
		if st.up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(t.descs.Up, prometheus.GaugeValue, up, engine)
		if st.up && st.snap != nil {
			t.descs.Collect(ch, st.snap)
		}
	}
}
