package exporter

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput-exporter/goodput-exporter/capacity"
	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// liveCapacity is a target's live knee: one estimator per model and SLO
// (capacity.Observer) and the descriptors of its series.
type liveCapacity struct {
	obs                      *capacity.Observer
	knee, kneeGood, headroom *prometheus.Desc
	levels, pastKnee         *prometheus.Desc
}

// Estimate label values: a knee seen with load past it, or the highest
// goodput seen while it still rose.
const (
	estimateKnee  = "knee"
	estimateLower = "lower_bound"
)

func newLiveCapacity(cl prometheus.Labels) *liveCapacity {
	est := []string{"engine", "model", "slo", "estimate"}
	ev := []string{"engine", "model", "slo"}
	return &liveCapacity{
		obs: capacity.NewObserver(capacity.LiveOptions{}),
		knee: prometheus.NewDesc("llm_capacity_knee_requests_per_second",
			"Estimated load (arriving requests/s) at the knee under the SLO, from the load levels this daemon has observed: the level with the highest goodput. estimate=\"knee\" once a higher load was seen with goodput more than 5 % below it, no more than twice the last load that passed; estimate=\"lower_bound\" while goodput still rose at the highest load seen, or when the first failing load lay farther above the last passing one (loads between never observed), so the knee is at least this.", est, cl),
		kneeGood: prometheus.NewDesc("llm_capacity_knee_goodput_tokens_per_second",
			"Goodput (output tokens/s of the requests meeting every objective, lower bound) at the estimated knee; see llm_capacity_knee_requests_per_second for estimate.", est, cl),
		headroom: prometheus.NewDesc("llm_capacity_headroom_ratio",
			"1 − the last minute's load ÷ the knee's load; negative past the knee. With estimate=\"lower_bound\" the true headroom is at least this.", est, cl),
		levels: prometheus.NewDesc("llm_capacity_load_levels",
			"Distinct load levels (5 % wide, at least two one-minute windows each) behind the live knee estimate: its evidence.", ev, cl),
		pastKnee: prometheus.NewDesc("llm_capacity_past_knee_observed",
			"1 when load past the estimated knee has been observed (the estimate is a knee), 0 when not (a lower bound).", ev, cl),
	}
}

func (c *liveCapacity) emit(s collector.Sink, engine string) {
	for _, k := range c.obs.Estimates() {
		label, past := estimateLower, 0.0
		if k.Reached {
			label, past = estimateKnee, 1
		}
		lv := collector.Labels(engine, k.Model, k.SLO, label)
		s.Sample(c.knee, prometheus.GaugeValue, k.KneeLoad, lv)
		s.Sample(c.kneeGood, prometheus.GaugeValue, k.KneeGoodput, lv)
		s.Sample(c.headroom, prometheus.GaugeValue, k.Headroom, lv)
		ev := collector.Labels(engine, k.Model, k.SLO)
		s.Sample(c.levels, prometheus.GaugeValue, float64(k.Levels), ev)
		s.Sample(c.pastKnee, prometheus.GaugeValue, past, ev)
	}
}

// capacityObserve is the scrape hook (under t.mu, after the tracker's
// update): it makes the target's estimators on first use.
func (t *target) capacityObserve(prev, cur *snapshot.Snapshot) {
	if t.capLive == nil {
		t.capLive = newLiveCapacity(constLabels(t.cfg))
	}
	t.capLive.obs.Observe(t.tracker, prev, cur)
}

// capacityMetrics is the emit hook (under t.mu).
func (t *target) capacityMetrics(s collector.Sink, engine snapshot.Engine) {
	if t.capLive != nil {
		t.capLive.emit(s, string(engine))
	}
}
