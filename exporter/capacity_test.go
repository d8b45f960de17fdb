package exporter

import (
	"math"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// capacitySeries collects the llm_capacity_* samples by name and estimate.
func capacitySeries(t *testing.T, tg *target) map[string]float64 {
	t.Helper()
	var sink collector.ConstSink
	tg.capacityMetrics(&sink, snapshot.VLLM)
	got := map[string]float64{}
	for _, m := range sink {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		key := m.Desc().String()
		key = key[strings.Index(key, `"`)+1:]
		key = key[:strings.Index(key, `"`)]
		for _, l := range pb.GetLabel() {
			if l.GetName() == "estimate" {
				key += "/" + l.GetValue()
			}
			if l.GetName() == "target" && l.GetValue() != "t" {
				t.Errorf("target label %q", l.GetValue())
			}
		}
		got[key] = pb.GetGauge().GetValue()
	}
	return got
}

// The live knee series of a target, through the scrape and emit hooks:
// three minutes at 10 req/s of 100-token requests, all within the e2e
// objective (1,000 good tok/s), give one load level and a lower bound at
// 10 req/s; three more at 20 req/s with 30 % good (2,000 tok/s, 600 good:
// below 95 % of 1,000 and of 2,000) make it a knee, with headroom
// 1 − 20/10 = −1 and two levels.
func TestLiveCapacitySeries(t *testing.T) {
	slos := []goodput.SLO{{Name: "s", Objectives: []goodput.Objective{{Kind: goodput.KindE2E, Threshold: 1, Target: 0.9}}}}
	tg := &target{cfg: config.Target{Name: "t"}, tracker: goodput.NewTracker("t", slos)}
	var reqs, good, toks float64
	var prev *snapshot.Snapshot
	at := time.Unix(0, 0)
	step := func(perSec, goodShare float64) {
		reqs += perSec * 5
		good += perSec * 5 * goodShare
		toks += perSec * 5 * 100
		m := snapshot.Model{Name: "m"}
		m.Hists[snapshot.E2E] = &snapshot.Histogram{Bounds: []float64{1}, Cumulative: []float64{good}, Count: reqs}
		m.Counters[snapshot.GenerationTokens] = snapshot.Value{V: toks, OK: true}
		cur := &snapshot.Snapshot{Target: "t", Engine: snapshot.VLLM, Time: at, Models: []snapshot.Model{m}}
		if err := tg.tracker.Update(cur); err != nil {
			t.Fatal(err)
		}
		tg.capacityObserve(prev, cur)
		prev = cur
		at = at.Add(5 * time.Second)
	}
	if got := capacitySeries(t, tg); len(got) != 0 {
		t.Fatalf("series before any scrape: %v", got)
	}
	for range 37 { // the baseline and 36 intervals: three windows
		step(10, 1)
	}
	got := capacitySeries(t, tg)
	want := map[string]float64{
		"llm_capacity_knee_requests_per_second/lower_bound":       10,
		"llm_capacity_knee_goodput_tokens_per_second/lower_bound": 1000,
		"llm_capacity_headroom_ratio/lower_bound":                 0,
		"llm_capacity_load_levels":                                1,
		"llm_capacity_past_knee_observed":                         0,
	}
	check := func() {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("series %v, want %v", got, want)
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-9 {
				t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
			}
		}
	}
	check()
	for range 36 {
		step(20, 0.3)
	}
	got = capacitySeries(t, tg)
	want = map[string]float64{
		"llm_capacity_knee_requests_per_second/knee":       10,
		"llm_capacity_knee_goodput_tokens_per_second/knee": 1000,
		"llm_capacity_headroom_ratio/knee":                 -1,
		"llm_capacity_load_levels":                         2,
		"llm_capacity_past_knee_observed":                  1,
	}
	check()
}
