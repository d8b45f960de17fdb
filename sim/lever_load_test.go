package sim

import (
	"testing"
	"time"
)

// runSameLoad runs the healthy engine (its cache, scheduler limits and
// GPU) under the traffic lever l offers, healthy from the start, with the
// same seed and clock as runLever: the comparison at equal offered load.
func runSameLoad(t *testing.T, l Lever, d time.Duration) *trace {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Workload = l.applyTo(cfg).Workload
	tr := &trace{e: mustNew(t, cfg), pts: map[time.Duration]point{}}
	for at := time.Duration(0); at <= leverStart+d+10*time.Second; at += time.Second {
		tr.e.AdvanceTo(at)
		tr.pts[at] = point{tr.e.State(), tr.e.GPU()}
	}
	return tr
}

// Every lever against the healthy engine under the same offered load, so
// that what a lever shows is its own effect and not only more traffic.
// queue_growth is itself the load (arrivals x4), so its equal-load run is
// the lever; prefix_cache_collapse changes only the prompts' prefixes and
// is checked against the same rate in TestLevers; kv_monopoly's sessions
// are the traffic, so it is set against the same request rate.
func TestLeversAtEqualLoad(t *testing.T) {
	from, to := sec(70), sec(130)
	for _, tc := range []struct {
		lever Lever
		check func(t *testing.T, lev, same *trace)
	}{
		{DecodeSaturation, func(t *testing.T, lev, same *trace) {
			// Same 22 req/s: the capped engine queues (TTFT breaks, TPOT
			// holds); the uncapped one keeps TTFT and breaks TPOT.
			l, s := lev.chat(from, to), same.chat(from, to)
			if p := q(l, 0.95, tpot); p <= 50*time.Millisecond {
				t.Errorf("decode_saturation TPOT p95 %v, want over the chat SLO's 50ms", p)
			}
			if p := q(s, 0.95, tpot); p > 50*time.Millisecond {
				t.Errorf("healthy engine at the same load: TPOT p95 %v, want within 50ms", p)
			}
			if p := q(l, 0.9, ttft); p > 500*time.Millisecond {
				t.Errorf("decode_saturation TTFT p90 %v, want within 500ms", p)
			}
			if w := same.mean(from, to, waiting); w < 50 {
				t.Errorf("healthy engine at the same load: %.0f waiting, want a queue", w)
			}
			if w := lev.mean(from, to, waiting); w > 0.05*lev.mean(from, to, running) {
				t.Errorf("decode_saturation: %.0f waiting, want a flat queue", w)
			}
		}},
		{KVPreemption, func(t *testing.T, lev, same *trace) {
			// Same long-output traffic with the full cache: no preemption.
			if lev.perSec(from, to, preemptions) == 0 || same.perSec(from, to, preemptions) != 0 {
				t.Errorf("preemptions/s %.2f under the lever, %.2f with the full cache; want only the lever's",
					lev.perSec(from, to, preemptions), same.perSec(from, to, preemptions))
			}
		}},
		{PrefillInterference, func(t *testing.T, lev, _ *trace) {
			// Against more chat traffic carrying the same prompt tokens
			// per second (10 + 0.5 x 12k / 1k = 16 req/s): the two differ
			// in prompt tokens per request, not in prompt load.
			cfg := DefaultConfig()
			cfg.Workload.Classes[0].Rate = 16
			more := &trace{e: mustNew(t, cfg), pts: map[time.Duration]point{}}
			for at := time.Duration(0); at <= to; at += time.Second {
				more.e.AdvanceTo(at)
				more.pts[at] = point{more.e.State(), more.e.GPU()}
			}
			prompt := func(c *Counters) uint64 { return c.PromptTokens }
			if l, m := lev.perSec(from, to, prompt), more.perSec(from, to, prompt); l < 0.75*m || l > 1.33*m {
				t.Errorf("prompt tokens/s %.0f vs %.0f of more chat, want comparable", l, m)
			}
			per := func(tr *trace) float64 {
				rs := tr.e.Truth().Records(from, to)
				sum := 0
				for _, r := range rs {
					sum += r.PromptTokens
				}
				return float64(sum) / float64(len(rs))
			}
			if l, m := per(lev), per(more); l < 1.3*m {
				t.Errorf("prompt tokens per request %.0f vs %.0f of more chat, want longer", l, m)
			}
		}},
		{GPUThrottling, func(t *testing.T, lev, same *trace) {
			if ls, ss := stepTime(lev, from, to), stepTime(same, from, to); ls < ss*115/100 {
				t.Errorf("mean step %v throttled vs %v cool at the same load, want slower", ls, ss)
			}
			if clk := same.mean(from, to, func(p point) float64 { return p.gpu.SMClockMHz }); clk < DefaultConfig().GPU.MaxSMClockMHz {
				t.Errorf("the cool GPU clocks %.0f MHz at the same load, want the maximum", clk)
			}
		}},
		{KVMonopoly, func(t *testing.T, lev, _ *trace) {
			// The four long-context sessions add well under 0.1 req/s: at
			// the same request rate the healthy engine uses a tenth of its
			// cache, and each running request holds a small share of it.
			plain := runSameLoad(t, Healthy, 90*time.Second)
			per := func(tr *trace, a, b time.Duration) float64 {
				return tr.mean(a, b, kvUsage) / tr.mean(a, b, running)
			}
			if u := plain.mean(sec(100), to, kvUsage); u > 0.5 {
				t.Errorf("healthy engine at the same request rate: KV %.2f, want low", u)
			}
			if l, h := per(lev, sec(100), to), per(plain, sec(100), to); l < 5*h {
				t.Errorf("KV per running request %.4f vs %.4f healthy at the same rate, want many times more", l, h)
			}
		}},
		{EngineStall, func(t *testing.T, lev, same *trace) {
			if same.perSec(leverStart+time.Second, sec(100), gen) == 0 || lev.perSec(leverStart+time.Second, sec(100), gen) != 0 {
				t.Error("want tokens from the running engine and none from the stalled one at the same load")
			}
		}},
	} {
		t.Run(string(tc.lever), func(t *testing.T) {
			t.Parallel()
			tc.check(t, runLever(t, tc.lever, 90*time.Second), runSameLoad(t, tc.lever, 90*time.Second))
		})
	}
}
