package exporter

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// llama.cpp's mean times per token reach the llm_signal_time_per_*
// gauges as the diagnosis window saw them, from two real b11669
// captures of one server, by hand: 340.7335 s over 33,344
// generated tokens, 40.6143 s over 32,401 computed prompt tokens. A vLLM
// target, which does not time its phases, has neither gauge.
func TestTimePerTokenGauges(t *testing.T) {
	parse := func(e snapshot.Engine, rel string, at time.Time) *snapshot.Snapshot {
		p, err := collector.NewParser(e, collector.ParseOptions{DefaultModel: "m0", ModelLimit: 10})
		if err != nil {
			t.Fatal(err)
		}
		s, err := p.Parse(fixture(t, rel), "", at)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		engine      snapshot.Engine
		first, then string
		gen, prompt float64 // 0: absent
	}{
		{snapshot.LlamaCPP, "llamacpp/llamacpp-b11669-0.7.0-debian-light-load.prom", "llamacpp/llamacpp-b11669-0.7.0-debian-overload.prom",
			340.7335 / 33344, 40.6143 / 32401},
		{snapshot.VLLM, "vllm/v1-latest-from-source.prom", "vllm/v1-latest-from-source.prom", 0, 0},
	} {
		e, tg := manualTarget(t, c.first, string(c.engine))
		tg.scrape(context.Background()) // the target's first scrape: its series are exported
		t0 := time.Now().Add(time.Second)
		tg.mu.Lock()
		tg.diagnose(t0, parse(c.engine, c.first, t0))
		// A window of history first (the first capture again: nothing
		// completes), then the minute to the second capture.
		for i := 1; i <= 13; i++ {
			at, rel := t0.Add(time.Duration(i)*5*time.Second), c.first
			if i == 13 {
				rel = c.then
			}
			tg.diagnose(at, parse(c.engine, rel, at))
		}
		tg.mu.Unlock()
		mfs := gather(t, e)
		for name, want := range map[string]float64{"llm_signal_time_per_output_token_mean_seconds": c.gen, "llm_signal_time_per_prompt_token_mean_seconds": c.prompt} {
			mf := mfs[name]
			switch {
			case want == 0 && mf != nil:
				t.Errorf("%s: %s = %v from an engine without timing", c.engine, name, mf.GetMetric()[0].GetGauge().GetValue())
			case want != 0 && mf == nil:
				t.Errorf("%s: no %s", c.engine, name)
			case want != 0 && math.Abs(mf.GetMetric()[0].GetGauge().GetValue()-want) > 1e-12:
				t.Errorf("%s: %s = %v, want %v", c.engine, name, mf.GetMetric()[0].GetGauge().GetValue(), want)
			}
		}
	}
}
