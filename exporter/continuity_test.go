package exporter

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/internal/syncbuf"
)

// sequenceTarget builds the window test's target (testdata/window/slos.yml)
// over a server that answers the given bodies in turn, repeating the last.
func sequenceTarget(t *testing.T, bodies ...[]byte) (*Exporter, *target) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		i := min(int(n.Add(1))-1, len(bodies)-1)
		w.Write(bodies[i])
	}))
	t.Cleanup(srv.Close)
	cfg, err := config.Load("testdata/window/slos.yml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Targets[0].URL = srv.URL
	e := New(Options{Interval: time.Hour, Timeout: 5 * time.Second, Logger: discardLogger()})
	e.cfg = cfg
	tg, err := newTarget(cfg.Targets[0], 5*time.Second, cfg.GoodputSLOs(), e)
	if err != nil {
		t.Fatal(err)
	}
	e.targets = map[string]*target{tg.cfg.Name: tg}
	e.self.init(tg.cfg.Name)
	return e, tg
}

func scrapeN(tg *target, n int) {
	for range n {
		tg.scrape(context.Background())
	}
}

// sum adds every sample of a family whose labels include want.
func sum(t *testing.T, e *Exporter, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := e.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	total, found := 0.0, false
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.Metric {
			for _, lp := range m.Label {
				if v, ok := want[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			found = true
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	if !found {
		return -1
	}
	return total
}

func readWindow(t *testing.T, name string) []byte {
	t.Helper()
	return mustRead(t, "testdata/window/"+name)
}

const rank0Tokens = `vllm:generation_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 343899.0`

// One engine counter that dips by 0.01 % and comes back, over and over (a
// URL load-balanced across two replicas), once made every scrape a
// "restart" that re-added the lifetime totals: +20,000 requests per flap.
// The histograms do not move, so every derived counter must stay at 0.
func TestFlappingCounterAddsNothing(t *testing.T) {
	t0 := readWindow(t, "t0.prom")
	dip := bytes.Replace(t0, []byte(rank0Tokens), []byte(`vllm:generation_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 343864.6`), 1)
	if bytes.Equal(dip, t0) {
		t.Fatal("fixture line not found")
	}
	e, tg := sequenceTarget(t, t0, dip, t0, dip, t0, dip, t0)
	scrapeN(tg, 7)
	for _, name := range []string{"llm_slo_requests_total", "llm_slo_good_requests_total", "llm_goodput_requests_total", "llm_goodput_tokens_total"} {
		if got := sum(t, e, name, nil); got != 0 {
			t.Errorf("%s = %g after 3 flaps, want 0", name, got)
		}
	}
	// Three dips of the summed counter (654120 -> 654085.6): glitches.
	if got := sum(t, e, "goodput_exporter_series_discontinuities_total", map[string]string{"reason": "glitch"}); got != 3 {
		t.Errorf("glitches counted %g, want 3", got)
	}
	if st := tg.snapshotState(); !st.up || st.snap.Restarted {
		t.Errorf("up=%v restarted=%v: a dip is not a restart", st.up, st.snap.Restarted)
	}
}

// A duplicate line whose value differs from the first: the first sample is
// kept every time, so nothing moves, and each duplicate is counted.
func TestFlappingDuplicateAddsNothing(t *testing.T) {
	t0 := readWindow(t, "t0.prom")
	dup := bytes.Replace(t0, []byte(rank0Tokens), []byte(rank0Tokens+"\n"+`vllm:generation_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 12.0`), 1)
	e, tg := sequenceTarget(t, t0, dup, t0, dup, t0)
	scrapeN(tg, 5)
	if got := sum(t, e, "llm_goodput_tokens_total", nil); got != 0 {
		t.Errorf("goodput tokens %g, want 0", got)
	}
	if got := sum(t, e, "goodput_exporter_target_duplicate_samples_total", nil); got != 2 {
		t.Errorf("duplicates counted %g, want 2", got)
	}
	if got := sum(t, e, "llm_generation_tokens_total", nil); got != 654120 {
		t.Errorf("llm_generation_tokens_total %g, want 343899 + 310221 = 654120 (the first sample)", got)
	}
}

// A histogram that first appears after the target's first scrape was
// created by the engine on its first observation: its counts are the
// interval's. The queue histogram is missing from the first body and
// appears in t1 with 1320 + 1210 = 2530 requests, 1191 + 1097 = 2288 of
// them at or under the 1 s threshold (t1's le="1.0" buckets).
func TestLateHistogramCountsFromZero(t *testing.T) {
	var noQueue []string
	for _, l := range strings.Split(string(readWindow(t, "t0.prom")), "\n") {
		if !strings.Contains(l, "vllm:request_queue_time_seconds") {
			noQueue = append(noQueue, l)
		}
	}
	e, tg := sequenceTarget(t, []byte(strings.Join(noQueue, "\n")), readWindow(t, "t1.prom"))
	scrapeN(tg, 2)
	q := map[string]string{"slo": "batch", "objective": "queue"}
	if got := sum(t, e, "llm_slo_requests_total", q); got != 2530 {
		t.Errorf("queue judged %g, want 2530", got)
	}
	if got := sum(t, e, "llm_slo_good_requests_total", q); got != 2288 {
		t.Errorf("queue good %g, want 2288", got)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// An objective whose histogram the engine has but has not created yet (an
// idle engine creates it on its first request) is pending, not
// unsupported, and one line says when it becomes measurable; an engine
// that has no such family at all is unsupported.
func TestPendingObjectiveIsNotUnsupported(t *testing.T) {
	var idle []string
	for _, l := range strings.Split(string(readWindow(t, "t0.prom")), "\n") {
		if !strings.Contains(l, "vllm:time_to_first_token_seconds") {
			idle = append(idle, l)
		}
	}
	_, tg := sequenceTarget(t, []byte(strings.Join(idle, "\n")), []byte(strings.Join(idle, "\n")), readWindow(t, "t1.prom"), readWindow(t, "t1.prom"))
	logs := &syncbuf.Buffer{}
	tg.logger = slog.New(slog.NewTextHandler(logs, nil))
	scrapeN(tg, 2)
	out := logs.String()
	if n := strings.Count(out, "SLO objective not measurable yet"); n != 1 || !strings.Contains(out, "objective=ttft") {
		t.Errorf("pending said %d times, want once for ttft:\n%s", n, out)
	}
	if strings.Contains(out, "cannot be measured") {
		t.Errorf("an idle vLLM's TTFT called unsupported:\n%s", out)
	}
	scrapeN(tg, 2)
	out = logs.String()
	if n := strings.Count(out, "SLO objective measurable now"); n != 1 {
		t.Errorf("measurable said %d times, want once:\n%s", n, out)
	}
	if !engineCanMeasure("vllm", "ttft") || engineCanMeasure("llamacpp", "ttft") || engineCanMeasure("sglang", "error") {
		t.Error("engineCanMeasure disagrees with the support matrix (llama.cpp has no TTFT histogram, SGLang no finish reasons)")
	}
}

// A Service that load-balances two engine processes: the start time flips
// between two values. The switch to the second process only sets
// baselines; the switch back is an error with its own reason, llm_up 0,
// and nothing is counted from either process meanwhile.
func TestAddressReachingTwoProcesses(t *testing.T) {
	t0 := readWindow(t, "t0.prom")
	t1 := readWindow(t, "t1.prom")
	proc := func(body []byte, start string) []byte {
		return append([]byte("# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds "+start+"\n"), body...)
	}
	// Process A serves t0, process B (a busier replica) t1.
	e, tg := sequenceTarget(t, proc(t0, "1000"), proc(t1, "2000"), proc(t0, "1000"), proc(t1, "2000"))
	logs := &syncbuf.Buffer{}
	tg.logger = slog.New(slog.NewTextHandler(logs, nil))
	scrapeN(tg, 4)
	st := tg.snapshotState()
	if st.up || st.lastReason != "multiple_engines" {
		t.Fatalf("up=%v reason=%q, want down with multiple_engines", st.up, st.lastReason)
	}
	if got := sum(t, e, "goodput_exporter_target_scrape_errors_total", map[string]string{"reason": "multiple_engines"}); got != 2 {
		t.Errorf("multiple_engines errors %g, want 2 (scrapes 3 and 4)", got)
	}
	if got := sum(t, e, "llm_slo_requests_total", nil); got != 0 {
		t.Errorf("llm_slo_requests_total %g, want 0: nothing may be counted across two processes", got)
	}
	if n := strings.Count(logs.String(), "more than one engine process"); n != 1 {
		t.Errorf("the flip was logged %d times, want once:\n%s", n, logs.String())
	}
}
