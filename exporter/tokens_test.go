package exporter

import (
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// llm_goodput_tokens_bounded says which token figures are bounds: 1 for a
// model with the output-length histogram, 0 for one with only the token
// counter (SGLang without --collect-tokens-histogram), where the HELP
// calls the figure an estimate. Two requests of 10 and 300 tokens finish;
// e2e 0.8 s and 1.2 s against 1 s, so one is good.
func TestGoodputTokensBoundedOrEstimate(t *testing.T) {
	lens := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500}
	model := func(name string, n int, withHist bool) snapshot.Model {
		m := snapshot.Model{Name: name}
		e2e := &snapshot.Histogram{Bounds: []float64{1}, Cumulative: []float64{float64(n)}, Count: float64(2 * n)}
		m.Hists[snapshot.E2E] = e2e
		m.Counters[snapshot.GenerationTokens] = snapshot.Value{V: float64(310 * n), OK: true}
		if withHist {
			// n requests of 10 tokens (le=10) and n of 300 (le=500).
			cum := []float64{0, 0, 0, float64(n), float64(n), float64(n), float64(n), float64(n), float64(2 * n)}
			m.Hists[snapshot.OutputTokens] = &snapshot.Histogram{Bounds: lens, Cumulative: cum, Count: float64(2 * n), Sum: float64(310 * n)}
		}
		return m
	}
	slos := []goodput.SLO{{Name: "s", Objectives: []goodput.Objective{{Kind: goodput.KindE2E, Threshold: 1, Target: 0.9}}}}
	tr := goodput.NewTracker("t", slos)
	for i, n := range []int{1, 2} {
		s := &snapshot.Snapshot{Target: "t", Engine: snapshot.VLLM, Time: time.Unix(int64(5*i), 0),
			Models: []snapshot.Model{model("a-hist", n, true), model("b-counter", n, false)}}
		if err := tr.Update(s); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]float64{}
	var sink collector.ConstSink
	newSLODescs(nil).emit(&sink, tr, snapshot.VLLM)
	for _, m := range sink {
		desc := m.Desc().String()
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		var model, bound string
		for _, l := range pb.GetLabel() {
			switch l.GetName() {
			case "model":
				model = "/" + l.GetValue()
			case "bound":
				bound = "/" + l.GetValue()
			}
		}
		key := model + bound
		switch {
		case strings.Contains(desc, `"llm_goodput_tokens_bounded"`):
			got["bounded"+key] = pb.GetGauge().GetValue()
		case strings.Contains(desc, `"llm_goodput_tokens_total"`):
			got["tokens"+key] = pb.GetCounter().GetValue()
		}
	}
	// With the histogram: one of two good, L = U = 1. Lower: the short one
	// at its lower edge, 6, or 310 − 500 (the long one at le=500); 6.
	// Upper: the long one at 500, or 310 − 6; 304. Estimate: 310 × 0.5.
	want := map[string]float64{
		"bounded/a-hist": 1, "tokens/a-hist/lower": 6, "tokens/a-hist/upper": 304,
		"bounded/b-counter": 0, "tokens/b-counter/lower": 155, "tokens/b-counter/upper": 155,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}
