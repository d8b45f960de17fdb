package exporter

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/internal/syncbuf"
	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
)

// The hostile engines below are the classes a campaign against the daemon
// found corrupting its counters: a restart read from one witness where two
// are needed, and increases no engine could have made. Each serves vLLM V1
// bodies built here (real family names, labels and TTFT bounds; values
// chosen so that the expected totals can be worked by hand): every request
// has a TTFT of 0.1 s, so each one is judged and good under the chat SLO's
// 0.5 s objective (testdata/window/slos.yml), and llm_slo_requests_total
// for that objective is the number of requests counted.

const witnessModel = "meta-llama/Llama-3.1-8B-Instruct"

// vllmRanks renders one body: a rank per entry of n (its lifetime
// requests), every value times scale, with a process_start_time_seconds
// line when start is not empty.
func vllmRanks(start string, scale float64, n ...float64) []byte {
	var b strings.Builder
	if start != "" {
		fmt.Fprintf(&b, "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %s\n", start)
	}
	each := func(typ, name string, line func(rank int, v float64) string) {
		fmt.Fprintf(&b, "# TYPE %s %s\n", name, typ)
		for r, v := range n {
			b.WriteString(line(r, v*scale))
		}
	}
	lbl := func(r int) string { return fmt.Sprintf(`engine="%d",model_name="%s"`, r, witnessModel) }
	each("histogram", "vllm:time_to_first_token_seconds", func(r int, v float64) string {
		var s strings.Builder
		for _, le := range []string{"0.1", "0.25", "0.5", "1.0", "+Inf"} {
			fmt.Fprintf(&s, "vllm:time_to_first_token_seconds_bucket{%s,le=%q} %g\n", lbl(r), le, v)
		}
		fmt.Fprintf(&s, "vllm:time_to_first_token_seconds_count{%s} %g\n", lbl(r), v)
		fmt.Fprintf(&s, "vllm:time_to_first_token_seconds_sum{%s} %g\n", lbl(r), 0.1*v)
		return s.String()
	})
	each("counter", "vllm:generation_tokens_total", func(r int, v float64) string {
		return fmt.Sprintf("vllm:generation_tokens_total{%s} %g\n", lbl(r), 10*v)
	})
	each("counter", "vllm:request_success_total", func(r int, v float64) string {
		return fmt.Sprintf("vllm:request_success_total{engine=\"%d\",finished_reason=\"stop\",model_name=%q} %g\n", r, witnessModel, v)
	})
	return []byte(b.String())
}

// witnessTarget is the window test's target over a server that answers
// body(i) on its i-th request, with a 5 s interval (the shortest time an
// increase is judged over) and the given rate ceilings (0: the defaults,
// negative: no bound).
func witnessTarget(t *testing.T, maxReq float64, body func(i int) []byte) (*Exporter, *target, *syncbuf.Buffer) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write(body(int(n.Add(1)) - 1))
	}))
	t.Cleanup(srv.Close)
	cfg, err := config.Load("testdata/window/slos.yml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Targets[0].URL = srv.URL
	e := New(Options{Interval: 5 * time.Second, Timeout: 5 * time.Second, Logger: discardLogger(), MaxRequestRate: maxReq, MaxTokenRate: maxReq})
	e.cfg = cfg
	tg, err := newTarget(cfg.Targets[0], 5*time.Second, cfg.GoodputSLOs(), e)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncbuf.Buffer{}
	tg.logger = slog.New(slog.NewTextHandler(logs, nil))
	e.targets = map[string]*target{tg.cfg.Name: tg}
	e.self.init(tg.cfg.Name)
	return e, tg, logs
}

var ttftChat = map[string]string{"slo": "chat", "objective": "ttft"}

// bounds are the two settings every class runs under: the restart logic
// alone (no bound on increases) and with the default bound.
var bounds = []struct {
	name   string
	maxReq float64
}{{"unbounded", -1}, {"default-bound", 0}}

// A 4-rank vLLM whose last rank is missing from one scrape, and one whose
// every value reads 0.9 times for one scrape, under an unchanged process
// start time: every summed counter falls by less than half. It was a
// restart that re-added the lifetime totals (+3,000,423 judged requests in
// the campaign). Each rank has served 250,000 requests and serves 40 more
// per scrape: scrapes 0..4 hold 4 × 40 × 4 = 640 new requests. The dip
// adds nothing, the scrape after it adds both intervals (320) from the
// higher baseline kept: 640 exactly. Without a start time the fall is no
// fresh start either (3/4 and 0.9 of the old values), so the same.
func TestGlobalDipIsNoRestart(t *testing.T) {
	const lifetime = 250_000
	dips := map[string]func(start string, v float64) []byte{
		"last rank missing": func(start string, v float64) []byte { return vllmRanks(start, 1, v, v, v) },
		"every value x0.9":  func(start string, v float64) []byte { return vllmRanks(start, 0.9, v, v, v, v) },
	}
	for name, dip := range dips {
		for _, start := range []string{"1700000000", ""} {
			for _, bd := range bounds {
				t.Run(fmt.Sprintf("%s/start=%q/%s", name, start, bd.name), func(t *testing.T) {
					e, tg, logs := witnessTarget(t, bd.maxReq, func(i int) []byte {
						v := float64(lifetime + 40*i)
						if i == 2 {
							return dip(start, v)
						}
						return vllmRanks(start, 1, v, v, v, v)
					})
					scrapeN(tg, 5)
					if got := sum(t, e, "llm_slo_requests_total", ttftChat); got != 640 {
						t.Errorf("judged %g, want 640 (4 ranks × 40 × 4 scrapes)", got)
					}
					if got := sum(t, e, "llm_slo_good_requests_total", ttftChat); got != 640 {
						t.Errorf("good %g, want 640", got)
					}
					if strings.Contains(logs.String(), "engine restarted") {
						t.Errorf("a dip was taken for a restart:\n%s", logs.String())
					}
					if st := tg.snapshotState(); !st.up {
						t.Errorf("down after a dip: %q", st.lastReason)
					}
				})
			}
		}
	}
}

// No start time (multiprocess exporters, llama.cpp builds without the
// header) and a URL load-balanced over two processes: A has served
// 500,000 requests, B 480,000, both 40 more per scrape, answering in turn.
// The fall to B is no fresh start (a glitch, nothing added); A's return
// above where it was is the first alternation; the second, at scrape 4,
// makes the target multiple_engines until it answers from one process.
// Counted: A's own 80 between scrapes 0 and 2, never B's lifetime (the
// campaign saw +1,001,078 in 60 s).
func TestFlappingWithoutStartTime(t *testing.T) {
	for _, bd := range bounds {
		t.Run(bd.name, func(t *testing.T) {
			e, tg, _ := witnessTarget(t, bd.maxReq, func(i int) []byte {
				if i%2 == 0 {
					return vllmRanks("", 1, float64(500_000+40*i))
				}
				return vllmRanks("", 1, float64(480_000+40*i))
			})
			scrapeN(tg, 8)
			if got := sum(t, e, "llm_slo_requests_total", ttftChat); got != 80 {
				t.Errorf("judged %g, want 80 (A's increase from scrape 0 to 2)", got)
			}
			st := tg.snapshotState()
			if st.up || st.lastReason != "multiple_engines" {
				t.Errorf("up=%v reason=%q, want down with multiple_engines", st.up, st.lastReason)
			}
			if got := sum(t, e, "goodput_exporter_target_scrape_errors_total", map[string]string{"reason": "multiple_engines"}); got != 4 {
				t.Errorf("multiple_engines errors %g, want 4 (scrapes 4 to 7)", got)
			}
		})
	}
}

// The start time jumps forward (to after the previous scrape) while every
// counter keeps rising: a new process whose counts are of unknown age, a
// baseline, not a restart (which added +1,000,280 against 200). The
// process has served 1,000,000 requests and serves 40 per scrape: scrapes
// 0..5 hold 200, of which the 40 of the interval with the new start time
// only set the baseline: 160.
func TestStartTimeForwardWithRisingCounters(t *testing.T) {
	for _, bd := range bounds {
		t.Run(bd.name, func(t *testing.T) {
			var newStart atomic.Value
			e, tg, logs := witnessTarget(t, bd.maxReq, func(i int) []byte {
				start := "1700000000"
				if i >= 2 {
					newStart.CompareAndSwap(nil, fmt.Sprint(time.Now().Unix()))
					start = newStart.Load().(string)
				}
				return vllmRanks(start, 1, float64(1_000_000+40*i))
			})
			scrapeN(tg, 6)
			if got := sum(t, e, "llm_slo_requests_total", ttftChat); got != 160 {
				t.Errorf("judged %g, want 160", got)
			}
			if out := logs.String(); strings.Contains(out, "engine restarted") || !strings.Contains(out, "did not fall") {
				t.Errorf("want a baseline because the counters did not fall:\n%s", out)
			}
		})
	}
}

// Every sample written twice, the copy a thousand times the original, and
// the order flipping between scrapes, so that the first sample (the one
// kept) is the copy every other scrape. The rise to the copy is more than
// any engine can do in an interval (10^9 requests in 5 s against a
// ceiling of 10,000 a second): implausible, nothing added, the baseline
// kept; the drop back is then no fall at all. 1,000,000 requests and 40
// per scrape: the originals at scrapes 0, 2, 4, 6 hold 6 × 40 = 240. Each
// copy scrape rejects three series (TTFT, generation tokens, finished):
// 4 × 3 = 12 implausible increases.
func TestDuplicateOrderFlip(t *testing.T) {
	e, tg, logs := witnessTarget(t, 0, func(i int) []byte {
		v := float64(1_000_000 + 40*i)
		orig := vllmRanks("1700000000", 1, v)
		cp := vllmRanks("1700000000", 1000, v)
		var out []byte
		ol, cl := strings.Split(string(orig), "\n"), strings.Split(string(cp), "\n")
		for k := range ol {
			first, second := ol[k], cl[k]
			if i%2 == 1 {
				first, second = second, first
			}
			out = append(out, first+"\n"...)
			if first != second && !strings.HasPrefix(first, "#") && !strings.HasPrefix(first, "process_start") {
				out = append(out, second+"\n"...)
			}
		}
		return out
	})
	scrapeN(tg, 8)
	if got := sum(t, e, "llm_slo_requests_total", ttftChat); got != 240 {
		t.Errorf("judged %g, want 240", got)
	}
	if got := sum(t, e, "goodput_exporter_series_discontinuities_total", map[string]string{"reason": "implausible"}); got != 12 {
		t.Errorf("implausible increases %g, want 12", got)
	}
	if strings.Contains(logs.String(), "engine restarted") {
		t.Errorf("the drop back was taken for a restart:\n%s", logs.String())
	}
}

// A start time that wobbles by up to a second from one scrape to the next
// (procfs clock-tick rounding) is one process: it was multiple_engines on
// 38 of 40 scrapes. 40 scrapes, 160 requests each between them (4 ranks ×
// 40): every one of the 39 × 160 = 6,240 is counted.
func TestStartTimeWobble(t *testing.T) {
	wobble := []string{"1700000000.00", "1700000000.99", "1700000000.41", "1700000000.02", "1700000000.87", "1699999999.95"}
	e, tg, _ := witnessTarget(t, 0, func(i int) []byte {
		v := float64(100_000 + 40*i)
		return vllmRanks(wobble[i%len(wobble)], 1, v, v, v, v)
	})
	scrapeN(tg, 40)
	if got := sum(t, e, "llm_slo_requests_total", ttftChat); got != 6240 {
		t.Errorf("judged %g, want 6240 (39 intervals × 160)", got)
	}
	if got := sum(t, e, "goodput_exporter_target_scrape_errors_total", map[string]string{"reason": "multiple_engines"}); got != 0 {
		t.Errorf("multiple_engines errors %g, want 0", got)
	}
	if st := tg.snapshotState(); !st.up {
		t.Errorf("down: %q", st.lastReason)
	}
}

// While a family the joint needs is left out of one scrape (here a NaN
// TTFT _count on one rank), the goodput series stay in the exposition
// with the values they had; they went missing for that scrape, which a
// recording rule reads as a gap. The next good scrape measures from the
// last one that had the family, so nothing is lost either.
func TestGoodputSeriesStayWhileAFamilyIsLeftOut(t *testing.T) {
	t0, t1 := readWindow(t, "t0.prom"), readWindow(t, "t1.prom")
	const count = `vllm:time_to_first_token_seconds_count{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1210`
	bad := []byte(strings.Replace(string(t1), count, `vllm:time_to_first_token_seconds_count{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} NaN`, 1))
	if string(bad) == string(t1) {
		t.Fatal("fixture line not found")
	}
	e, tg := sequenceTarget(t, t0, t1, bad, testbody.Advance(t1, 0.1))
	series := []map[string]string{
		{"slo": "chat", "bound": "lower"}, {"slo": "chat", "bound": "upper"},
	}
	names := []string{"llm_goodput_requests_total", "llm_goodput_tokens_total"}
	scrapeN(tg, 2)
	before := map[string]float64{}
	for _, n := range names {
		for _, l := range series {
			v := sum(t, e, n, l)
			if v <= 0 {
				t.Fatalf("%s%v = %g after t1, want a positive count", n, l, v)
			}
			before[n+l["bound"]] = v
		}
	}
	scrapeN(tg, 1)
	for _, n := range names {
		for _, l := range series {
			if got := sum(t, e, n, l); got != before[n+l["bound"]] {
				t.Errorf("%s%v = %g with TTFT left out, want %g unchanged (-1: missing)", n, l, got, before[n+l["bound"]])
			}
		}
	}
	scrapeN(tg, 1)
	for _, n := range names {
		for _, l := range series {
			if got := sum(t, e, n, l); got <= before[n+l["bound"]] {
				t.Errorf("%s%v = %g after the family is back, want more than %g", n, l, got, before[n+l["bound"]])
			}
		}
	}
}

// The same two processes without a start time, the balancer staying on B
// for four scrapes: by the third the goodput layer takes B's lower values
// as its baselines, so A's return (500,200 after 480,160) would add
// 20,040. It comes back above where A was before the fall, after the
// baselines moved: a baseline, nothing added. Counted: B's 40 after the
// baselines moved (scrape 4) and A's 40 after its return (scrape 6).
func TestStickyBalancerWithoutStartTime(t *testing.T) {
	for _, bd := range bounds {
		t.Run(bd.name, func(t *testing.T) {
			e, tg, logs := witnessTarget(t, bd.maxReq, func(i int) []byte {
				if i >= 1 && i <= 4 {
					return vllmRanks("", 1, float64(480_000+40*i))
				}
				return vllmRanks("", 1, float64(500_000+40*i))
			})
			scrapeN(tg, 7)
			if got := sum(t, e, "llm_slo_requests_total", ttftChat); got != 80 {
				t.Errorf("judged %g, want 80", got)
			}
			if !strings.Contains(logs.String(), "came back above where it was before it fell 4 scrapes ago") {
				t.Errorf("the return was not a baseline:\n%s", logs.String())
			}
			if st := tg.snapshotState(); !st.up {
				t.Errorf("down: %q (one return is not an alternation)", st.lastReason)
			}
		})
	}
}
