package exporter

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/collector/gpu"
)

// emitSeries sends every target's series, the declared SLOs and the costs
// to s. The renderer passes its series cache; a test may pass a
// collector.ConstSink to get the same series as const metrics.
func (e *Exporter) emitSeries(s collector.Sink) {
	cfg := e.config()
	sloConfigSeries(cfg.GoodputSLOs(), s)
	targets := e.sortedTargets()
	for _, t := range targets {
		t.emit(s)
		e.costSeries(cfg, t, len(targets), s)
	}
	e.self.emit(s)
}

// emit sends the target's series under its lock.
func (t *target) emit(s collector.Sink) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &t.state
	if !st.attempted {
		return
	}
	engine := string(st.engine)
	if engine == "" {
		engine = "unknown"
	}
	up := 0.0
	if st.up {
		up = 1
	}
	s.Sample(t.descs.Up, prometheus.GaugeValue, up, collector.Labels(engine))
	if st.snap != nil {
		for i := range st.snap.Models {
			s.Sample(t.descs.ModelInfo, prometheus.GaugeValue, 1, collector.Labels(engine, st.snap.Models[i].Name))
		}
	}
	if st.up && st.snap != nil {
		t.descs.Emit(s, st.snap)
	}
	t.diagnosisMetrics(s, engine)
	// Goodput counters are the daemon's own and never reset, so they stay
	// while the engine is down: rate() over them remains continuous.
	t.sloD.emit(s, t.tracker, st.engine)
	t.exactMetrics(s, st.engine)
	t.capacityMetrics(s, st.engine)
}

// gpuCollector exports the GPU series through the registry (a few per
// GPU: no need for the series cache).
type gpuCollector struct{ m *gpu.Manager }

func (g gpuCollector) Describe(chan<- *prometheus.Desc)    {}
func (g gpuCollector) Collect(ch chan<- prometheus.Metric) { g.m.Metrics(ch) }

// engineGatherer gathers the cached series for callers other than the
// renderer (tests, linting): copies, so that the next render cannot change
// them under the caller.
type engineGatherer Exporter

func (g *engineGatherer) Gather() ([]*dto.MetricFamily, error) {
	e := (*Exporter)(g)
	var out []*dto.MetricFamily
	var err error
	e.series.Gather(e.emitSeries, func(mfs []*dto.MetricFamily, gerr error) {
		for _, mf := range mfs {
			out = append(out, proto.Clone(mf).(*dto.MetricFamily))
		}
		err = gerr
	})
	return out, err
}
