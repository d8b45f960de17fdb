package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/goodput-exporter/goodput-exporter/sim"
)

func viewReading(t *testing.T, at time.Time, text string) reading {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return reading{at: at, mfs: mfs}
}

// The view's width must not depend on timing: two readings a millisecond
// apart (a loaded machine's view ticker firing twice in a row) with a
// scrape between them once made a rate of one scrape's tokens over a
// millisecond, a number wide enough to push the table past 120 columns.
// Such a pair is not drawn; and whatever the values, no line is wider
// than the terminal.
func TestDemoViewWidth(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := StartFarm(ctx, FarmSpec{Formats: []sim.Format{sim.FormatVLLM, sim.FormatSGLang}, Speed: 1, Seed: 1, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	series := func(tokens float64) string {
		var b strings.Builder
		b.WriteString("# TYPE llm_goodput_tokens_total counter\n# TYPE llm_generation_tokens_total counter\n# TYPE llm_failure_mode gauge\n")
		for _, en := range f.Engines {
			for _, bd := range []string{"lower", "upper", "exact"} {
				b.WriteString(`llm_goodput_tokens_total{target="` + en.Name + `",slo="chat",bound="` + bd + `"} ` + model.SampleValue(tokens).String() + "\n")
			}
		}
		for _, en := range f.Engines {
			b.WriteString(`llm_generation_tokens_total{target="` + en.Name + `"} ` + model.SampleValue(tokens).String() + "\n")
		}
		for _, en := range f.Engines {
			for _, m := range []string{"queue_growth", "kv_preemption", "prefill_interference", "prefix_cache_collapse", "decode_saturation"} {
				b.WriteString(`llm_failure_mode{target="` + en.Name + `",mode="` + m + `"} 1` + "\n")
			}
		}
		return b.String()
	}
	t0 := time.Unix(1000, 0)
	var out bytes.Buffer
	v := &demoView{metricsURL: "http://127.0.0.1:9835/metrics", farm: f, slo: map[string]string{"vllm-0": "chat", "sglang-1": "chat"},
		logs: newLogRing(4), out: &out, speed: 20, minSpan: 600 * time.Millisecond}
	v.history = []reading{viewReading(t, t0, series(0)), viewReading(t, t0.Add(time.Millisecond), series(5e5))}
	v.draw()
	if out.Len() != 0 {
		t.Errorf("rates over 1 ms were drawn:\n%s", out.String())
	}
	v.history[1].at = t0.Add(2 * time.Second)
	v.logs.Write([]byte(strings.Repeat("a long log line ", 20) + "\n"))
	v.draw()
	// 5e5 tokens over 40 simulated seconds: 12500.0 a second, exact and
	// generated, for each of the two engines (the good-token bounds come
	// from window totals this exposition does not have).
	if strings.Count(out.String(), "12500.0") != 4 {
		t.Errorf("the view does not show the goodput rate:\n%s", out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if n := utf8.RuneCountInString(line); n > viewWidth {
			t.Errorf("a line of %d columns:\n%s", n, line)
		}
	}
}
