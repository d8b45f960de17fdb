package exporter

import (
	"bytes"
	"fmt"
	"regexp"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
)

// outputLengthFamilies are the counters the token window bounds read.
var outputLengthFamilies = []string{
	"llm_goodput_output_length_requests_total", "llm_goodput_output_length_tokens_total",
	"llm_goodput_output_length_unmeasured_requests_total",
}

// counterSeries returns every sample of the named counter families by
// family and label set.
func counterSeries(t *testing.T, e *Exporter, names ...string) map[string]float64 {
	t.Helper()
	mfs, err := e.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, name := range names {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.Metric {
				key := name
				for _, lp := range m.Label {
					key += fmt.Sprintf(",%s=%q", lp.GetName(), lp.GetValue())
				}
				out[key] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// The output-length counters through hostile scrapes of one engine: the
// histogram left out of a scrape, a sum that reads NaN, the process
// restarted, a new bucket layout, and the histogram back each time. No
// series ever falls or disappears once exported, and each scrape whose
// lengths cannot be read adds its requests to the unmeasured counter.
func TestOutputLengthCountersHostile(t *testing.T) {
	t0 := readWindow(t, "t0.prom")
	proc := func(body []byte, start string) []byte {
		return append([]byte("# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds "+start+"\n"), body...)
	}
	outLines := regexp.MustCompile(`(?m)^vllm:request_generation_tokens\S*.*\n`)
	without := func(b []byte) []byte { return outLines.ReplaceAll(b, nil) }
	nanSum := func(b []byte) []byte {
		return regexp.MustCompile(`(?m)^(vllm:request_generation_tokens_sum\{[^}]*\}) \S+$`).ReplaceAll(b, []byte("$1 NaN"))
	}
	relayout := func(b []byte) []byte {
		return regexp.MustCompile(`(?m)^vllm:request_generation_tokens_bucket\{[^}]*le="2.0"[^}]*\} \S+\n`).ReplaceAll(b, nil)
	}
	adv := func(f float64) []byte { return testbody.Advance(t0, f) }
	steps := []struct {
		what       string
		body       []byte
		unmeasured bool // the scrape's requests are unmeasured
	}{
		{"baseline", proc(t0, "1000"), false},
		{"advanced", proc(adv(0.1), "1000"), false},
		{"histogram left out", proc(without(adv(0.2)), "1000"), true},
		{"back", proc(adv(0.3), "1000"), false},
		{"NaN sum", proc(nanSum(adv(0.4)), "1000"), true},
		{"back after NaN", proc(adv(0.5), "1000"), false},
		{"restarted process", proc(adv(0.05), "9000"), false},
		{"restarted process, later", proc(adv(0.1), "9000"), false},
		{"new layout", proc(relayout(adv(0.2)), "9000"), true},
		{"new layout, later", proc(relayout(adv(0.3)), "9000"), true},
	}
	bodies := make([][]byte, len(steps))
	for i, s := range steps {
		bodies[i] = s.body
		if i > 0 && bytes.Equal(s.body, steps[i-1].body) {
			t.Fatalf("step %q: body unchanged", s.what)
		}
	}
	e, tg := sequenceTarget(t, bodies...)
	prev := map[string]float64{}
	unmeasured := func(m map[string]float64) float64 {
		n := 0.0
		for k, v := range m {
			if regexp.MustCompile(`^llm_goodput_output_length_unmeasured_requests_total,.*slo="chat"`).MatchString(k) {
				n += v
			}
		}
		return n
	}
	for i, s := range steps {
		scrapeN(tg, 1)
		cur := counterSeries(t, e, outputLengthFamilies...)
		for k, v := range prev {
			w, ok := cur[k]
			switch {
			case !ok:
				t.Errorf("%s: %s disappeared", s.what, k)
			case w < v:
				t.Errorf("%s: %s fell from %v to %v", s.what, k, v, w)
			}
		}
		for k, v := range cur {
			if v != v || v < 0 {
				t.Errorf("%s: %s = %v", s.what, k, v)
			}
		}
		if i > 0 && unmeasured(cur) > unmeasured(prev) != s.unmeasured {
			t.Errorf("%s: unmeasured %v after %v", s.what, unmeasured(cur), unmeasured(prev))
		}
		if i == 0 && len(cur) < 2*(len(outputLengthFamilies)+10) {
			// Two SLOs: eleven le_tokens series, the tokens and the
			// unmeasured each, from the baseline on, so that a window
			// over their first samples counts what the judged requests'
			// counters count.
			t.Fatalf("after the baseline scrape, %d output-length series: %v", len(cur), cur)
		}
		prev = cur
	}
}
