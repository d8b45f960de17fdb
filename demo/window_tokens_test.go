package demo

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// exposition renders the counters the window token bounds read for one
// target and SLO (chat: ttft and error), times k: k per-minute steps of
// rules/tests/token_bounds_test.yml's instance a (10 finished, 3 possibly
// failed, ttft met by 9 and error by 8 of 10, the ten requests of
// goodput's tenRequests, 932 tokens), with unmeasured requests.
func exposition(k, unmeasured float64) string {
	var b strings.Builder
	l := `target="vllm-0",engine="vllm",model="m",slo="chat"`
	fmt.Fprintf(&b, "# TYPE llm_goodput_judged_requests_total counter\nllm_goodput_judged_requests_total{%s} %g\n", l, 10*k)
	fmt.Fprintf(&b, "# TYPE llm_goodput_failed_requests_total counter\nllm_goodput_failed_requests_total{%s} %g\n", l, 3*k)
	fmt.Fprintf(&b, "# TYPE llm_goodput_objective_good_requests_total counter\n")
	fmt.Fprintf(&b, "llm_goodput_objective_good_requests_total{%s,objective=\"ttft\"} %g\n", l, 9*k)
	fmt.Fprintf(&b, "llm_goodput_objective_good_requests_total{%s,objective=\"error\"} %g\n", l, 8*k)
	fmt.Fprintf(&b, "# TYPE llm_goodput_objective_judged_requests_total counter\n")
	fmt.Fprintf(&b, "llm_goodput_objective_judged_requests_total{%s,objective=\"ttft\"} %g\n", l, 10*k)
	fmt.Fprintf(&b, "llm_goodput_objective_judged_requests_total{%s,objective=\"error\"} %g\n", l, 10*k)
	fmt.Fprintf(&b, "# TYPE llm_goodput_output_length_requests_total counter\n")
	// Written out of order, as a text exposition sorts label values.
	cum := map[string]float64{"1": 0, "10": 3, "100": 7, "1000": 10, "2": 0, "20": 3, "200": 9, "5": 0, "50": 7, "500": 10, "+Inf": 10}
	for le, n := range cum {
		fmt.Fprintf(&b, "llm_goodput_output_length_requests_total{%s,le_tokens=%q} %g\n", l, le, n*k)
	}
	fmt.Fprintf(&b, "# TYPE llm_goodput_output_length_tokens_total counter\nllm_goodput_output_length_tokens_total{%s} %g\n", l, 932*k)
	fmt.Fprintf(&b, "# TYPE llm_goodput_output_length_unmeasured_requests_total counter\nllm_goodput_output_length_unmeasured_requests_total{%s} %g\n", l, unmeasured)
	fmt.Fprintf(&b, "# TYPE llm_engine_hourly_cost gauge\nllm_engine_hourly_cost{target=\"vllm-0\",currency=\"USD\"} 3.6\n")
	return b.String()
}

// The demo's good tokens per second are the window bounds of the
// daemon's counters: five minutes of the ten requests a minute give
// [510, 4600] tokens (worked in rules/tests/token_bounds_test.yml), 1.7
// and 15.3 per second, and the cost per million at the lower bound is
// 3.6 / 3600 / 1.7 · 1e6 = 588.235. A window in which requests went
// unmeasured shows none.
func TestDemoViewWindowGoodTokens(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	a := viewReading(t, t0, exposition(5, 0))
	b := viewReading(t, t0.Add(300*time.Second), exposition(10, 0))
	lo, hi := windowGoodTokens(a, b, "vllm-0", "chat", 300)
	if lo != "1.7" || hi != "15.3" {
		t.Errorf("good tok/s %s..%s, want 1.7..15.3", lo, hi)
	}
	v := &demoView{slo: map[string]string{"vllm-0": "chat"}, speed: 1}
	if got := v.costPerMillion(a, b, "vllm-0"); got != "588.235" {
		t.Errorf("cost per million good tokens %s, want 588.235", got)
	}
	c := viewReading(t, t0.Add(300*time.Second), exposition(10, 1))
	if lo, hi := windowGoodTokens(a, c, "vllm-0", "chat", 300); lo != "-" || hi != "-" {
		t.Errorf("with unmeasured requests: %s..%s, want none", lo, hi)
	}
}

// Where the daemon's tokens are an estimate (llm_goodput_tokens_bounded
// 0: SGLang without its output-length histogram), the cell shows the
// intervals' figures added up, marked "~": 600 and 900 tokens more over
// 300 s are ~2.0..3.0 a second; where they are bounds and the window has
// none (requests unmeasured), nothing.
func TestDemoViewEstimatedGoodTokens(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	est := func(lower, upper, bounded float64) string {
		l := `target="sglang-1",slo="chat"`
		return "# TYPE llm_goodput_tokens_total counter\n" +
			"llm_goodput_tokens_total{" + l + `,bound="lower"} ` + strconv.FormatFloat(lower, 'g', -1, 64) + "\n" +
			"llm_goodput_tokens_total{" + l + `,bound="upper"} ` + strconv.FormatFloat(upper, 'g', -1, 64) + "\n" +
			"# TYPE llm_goodput_tokens_bounded gauge\nllm_goodput_tokens_bounded{" + l + "} " + strconv.FormatFloat(bounded, 'g', -1, 64) + "\n"
	}
	a := viewReading(t, t0, est(1000, 1000, 0))
	b := viewReading(t, t0.Add(300*time.Second), est(1600, 1900, 0))
	if lo, hi := goodTokens(a, b, "sglang-1", "chat", 300); lo != "~2.0" || hi != "3.0" {
		t.Errorf("estimated good tok/s %s..%s, want ~2.0..3.0", lo, hi)
	}
	b = viewReading(t, t0.Add(300*time.Second), est(1600, 1900, 1))
	if lo, hi := goodTokens(a, b, "sglang-1", "chat", 300); lo != "-" || hi != "-" {
		t.Errorf("bounded tokens without window totals: %s..%s, want none", lo, hi)
	}
	// The window's bounds win where they exist.
	w0 := viewReading(t, t0, exposition(5, 0))
	w1 := viewReading(t, t0.Add(300*time.Second), exposition(10, 0))
	if lo, hi := goodTokens(w0, w1, "vllm-0", "chat", 300); lo != "1.7" || hi != "15.3" {
		t.Errorf("good tok/s %s..%s, want the window's 1.7..15.3", lo, hi)
	}
}
