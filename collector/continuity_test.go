package collector

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

const fixtureModel = "meta-llama/Llama-3.1-8B-Instruct"

// vllmBody is the reconstructed vLLM V1 fixture with line replacements.
func vllmBody(t *testing.T, repl ...string) string {
	t.Helper()
	b := string(readFixture(t, snapshot.VLLM, "v1-latest-from-source.prom"))
	for i := 0; i+1 < len(repl); i += 2 {
		if !strings.Contains(b, repl[i]) {
			t.Fatalf("fixture has no %q", repl[i])
		}
		b = strings.Replace(b, repl[i], repl[i+1], 1)
	}
	return b
}

func familyErr(s *snapshot.Snapshot, family string) error {
	for _, e := range s.Errors {
		var fe *FamilyError
		if errors.As(e, &fe) && fe.Family == family {
			return e
		}
	}
	return nil
}

// A series written twice keeps its first sample, as Prometheus does; the
// fixture's generation counter is 343899 + 310221 = 654120 across its two
// ranks, and a repeated rank-0 line must not make it 998019.
func TestDuplicateSeriesKeepsFirstSample(t *testing.T) {
	rank0 := `vllm:generation_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 343899.0`
	for _, dup := range []string{
		rank0,
		// The same series with its labels in another order.
		`vllm:generation_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct",engine="0"} 5.0`,
	} {
		s := mustParse(t, snapshot.VLLM, vllmBody(t, rank0, rank0+"\n"+dup), "")
		m := s.Model(fixtureModel)
		if got := m.Counters[snapshot.GenerationTokens]; !got.OK || got.V != 654120 {
			t.Errorf("%q: generation tokens %+v, want 654120", dup, got)
		}
		if s.Duplicates != 1 || !strings.Contains(s.DuplicateSeries, "generation_tokens_total") {
			t.Errorf("%q: duplicates %d %q, want 1", dup, s.Duplicates, s.DuplicateSeries)
		}
	}
	// A steady parser counts duplicates on every parse, not only the first.
	p, _ := NewParser(snapshot.VLLM, ParseOptions{})
	body := []byte(vllmBody(t, rank0, rank0+"\n"+rank0))
	for i := range 3 {
		s, err := p.Parse(body, "", time.Unix(int64(i), 0))
		if err != nil || s.Duplicates != 1 {
			t.Fatalf("parse %d: %v, %d duplicates", i, err, s.Duplicates)
		}
	}
}

// Values that cannot be summed leave the family out for the model, with an
// error, rather than a number: a NaN _count on one rank (once exported as
// 9.2e18), a negative rank of a counter (once summed into 310221-5), an
// infinite bucket, a NaN _sum.
func TestUnsummableSamplesLeaveTheFamilyOut(t *testing.T) {
	cases := []struct {
		name, old, new, family string
	}{
		{"NaN _count on one rank",
			`vllm:e2e_request_latency_seconds_count{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1100.0`,
			`vllm:e2e_request_latency_seconds_count{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} NaN`,
			"vllm:e2e_request_latency_seconds"},
		{"negative counter rank",
			`vllm:generation_tokens_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 310221.0`,
			`vllm:generation_tokens_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} -5`,
			"vllm:generation_tokens_total"},
		{"+Inf in a bucket",
			`vllm:e2e_request_latency_seconds_bucket{engine="1",le="1.0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 136.0`,
			`vllm:e2e_request_latency_seconds_bucket{engine="1",le="1.0",model_name="meta-llama/Llama-3.1-8B-Instruct"} +Inf`,
			"vllm:e2e_request_latency_seconds"},
		{"NaN _sum",
			`vllm:e2e_request_latency_seconds_sum{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10118.075911387934`,
			`vllm:e2e_request_latency_seconds_sum{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} NaN`,
			"vllm:e2e_request_latency_seconds"},
	}
	for _, c := range cases {
		s := mustParse(t, snapshot.VLLM, vllmBody(t, c.old, c.new), "")
		m := s.Model(fixtureModel)
		if err := familyErr(s, c.family); err == nil {
			t.Errorf("%s: no error for %s; errors %v", c.name, c.family, s.Errors)
		}
		switch c.family {
		case "vllm:e2e_request_latency_seconds":
			if m.Hists[snapshot.E2E] != nil {
				t.Errorf("%s: e2e histogram kept: count %g", c.name, m.Hists[snapshot.E2E].Count)
			}
			if m.Hists[snapshot.TTFT] == nil {
				t.Errorf("%s: another family was dropped too", c.name)
			}
		case "vllm:generation_tokens_total":
			if m.Counters[snapshot.GenerationTokens].OK {
				t.Errorf("%s: counter kept: %+v", c.name, m.Counters[snapshot.GenerationTokens])
			}
			if !m.Counters[snapshot.PromptTokens].OK {
				t.Errorf("%s: another counter was dropped too", c.name)
			}
		}
	}
}

func snapAt(t *testing.T, sec int64, start float64, gen float64) *snapshot.Snapshot {
	t.Helper()
	s := &snapshot.Snapshot{Time: time.Unix(sec, 0), ProcessStart: start, Models: []snapshot.Model{{Name: "m"}}}
	s.Models[0].Counters[snapshot.GenerationTokens] = snapshot.Value{V: gen, OK: true}
	s.Models[0].Counters[snapshot.PromptTokens] = snapshot.Value{V: gen * 2, OK: true}
	return s
}

// Two processes behind one address (a load-balanced service) alternate:
// process A started at T+100, B at T+200, both long before the scrapes at
// T+1000 onwards. The switch to B is a baseline (its counts are of unknown
// age), the switch back to A a flip: the target errors until it answers
// from one process for steadyScrapes scrapes, then resumes from a baseline.
func TestStartTimeFlipping(t *testing.T) {
	const T = 1_700_000_000
	var c Continuity
	seq := []struct {
		start    float64
		want     string // "", restart, baseline, flip
		contains string
		gen      float64 // counter value; 0: 1000 + step
	}{
		{T + 100, "", "", 0},
		{T + 100, "", "", 0},
		{T + 200, "baseline", "unknown age", 0},
		{T + 100, "flip", "went back to 1700000100", 0},
		{T + 200, "flip", "went back to 1700000200", 0},
		{T + 200, "flip", "1 so far", 0},
		{T + 200, "flip", "2 so far", 0},
		{T + 200, "flip", "3 so far", 0},
		{T + 200, "flip", "4 so far", 0},
		{T + 200, "flip", "5 so far", 0},
		{T + 200, "baseline", "6 scrapes in a row", 0},
		{T + 200, "", "", 0},
		// A genuine restart: started after the previous scrape (T+1055)
		// and its counters fell.
		{T + 1057, "restart", "changed from 1700000200 to 1700001057 and every counter went down", 7},
		{T + 1057, "", "", 20},
	}
	var prev *snapshot.Snapshot
	for i, step := range seq {
		gen := step.gen
		if gen == 0 {
			gen = float64(1000 + i)
		}
		cur := snapAt(t, T+1000+int64(i)*5, step.start, gen)
		v := c.Judge(prev, cur)
		got, why := "", ""
		switch {
		case v.Flip != nil:
			got, why = "flip", v.Flip.Error()
			var se *ScrapeError
			if !errors.As(v.Flip, &se) || se.Reason != ReasonMultipleEngines {
				t.Errorf("step %d: flip error %v has the wrong reason", i, v.Flip)
			}
			if !strings.Contains(why, "more than one engine process") {
				t.Errorf("step %d: %q does not say why", i, why)
			}
		case v.Restart != "":
			got, why = "restart", v.Restart
		case v.Baseline != "":
			got, why = "baseline", v.Baseline
		}
		if got != step.want || !strings.Contains(why, step.contains) {
			t.Errorf("step %d (start %g): %s %q, want %s containing %q", i, step.start, got, why, step.want, step.contains)
		}
		if cur.Restarted != (got == "restart") || cur.Baseline != (got == "baseline") {
			t.Errorf("step %d: flags restarted=%v baseline=%v for %s", i, cur.Restarted, cur.Baseline, got)
		}
		prev = cur
	}
}

// Without process start times: one counter dipping is no restart (the
// goodput layer judges that series alone); every counter going down is;
// counters that went down together and come straight back above where they
// were are two engines alternating.
func TestCounterOnlyContinuity(t *testing.T) {
	var c Continuity
	judge := func(prev, cur *snapshot.Snapshot) string { return verdictWord(c.Judge(prev, cur)) }
	a := snapAt(t, 0, 0, 1000)
	dip := snapAt(t, 5, 0, 1000)
	dip.Models[0].Counters[snapshot.GenerationTokens].V = 999.9
	if got := judge(a, dip); got != "" {
		t.Errorf("one counter dipping: %q, want a continuation", got)
	}
	b := snapAt(t, 10, 0, 1010)
	if got := judge(dip, b); got != "" {
		t.Errorf("back up: %q", got)
	}
	fresh := snapAt(t, 15, 0, 30) // both counters down: 1010 -> 30, 2020 -> 60
	if got := judge(b, fresh); got != "restart" {
		t.Errorf("every counter down: %q, want restart", got)
	}
	grows := snapAt(t, 20, 0, 80)
	if got := judge(fresh, grows); got != "" {
		t.Errorf("a restarted engine growing: %q", got)
	}

	// Alternation: 5000 -> 40 (looks like a restart) -> 5010 (flip).
	var c2 Continuity
	c = c2
	x := snapAt(t, 0, 0, 5000)
	y := snapAt(t, 5, 0, 40)
	z := snapAt(t, 10, 0, 5010)
	judge(nil, x)
	if got := judge(x, y); got != "restart" {
		t.Errorf("first switch: %q", got)
	}
	if got := judge(y, z); got != "flip" {
		t.Errorf("switch back above the old values: %q, want flip", got)
	}
}

// verdictWord names a verdict: flip, restart, baseline or "" (continue).
func verdictWord(v Verdict) string {
	switch {
	case v.Flip != nil:
		return "flip"
	case v.Restart != "":
		return "restart"
	case v.Baseline != "":
		return "baseline"
	}
	return ""
}
