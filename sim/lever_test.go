package sim

import (
	"slices"
	"testing"
	"time"
)

// Each lever runs after 40s of healthy traffic in the same run, so the
// healthy baseline is the window [10s, 40s) of the same seed.
const (
	leverStart = 40 * time.Second
	baseFrom   = 10 * time.Second
)

type point struct {
	st  State
	gpu GPUState
}

type trace struct {
	e   *Engine
	pts map[time.Duration]point // every whole virtual second
}

func runLever(t *testing.T, l Lever, d time.Duration) *trace {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Scenario = Scenario{Phases: []Phase{{Lever: Healthy, Duration: leverStart}, {Lever: l, Duration: d}, {Lever: Healthy}}}
	tr := &trace{e: mustNew(t, cfg), pts: map[time.Duration]point{}}
	for at := time.Duration(0); at <= leverStart+d+10*time.Second; at += time.Second {
		tr.e.AdvanceTo(at)
		tr.pts[at] = point{tr.e.State(), tr.e.GPU()}
	}
	return tr
}

func sec(s int) time.Duration { return time.Duration(s) * time.Second }

func (tr *trace) at(d time.Duration) point { return tr.pts[d] }

// perSec is the rate of a counter over [from, to).
func (tr *trace) perSec(from, to time.Duration, f func(*Counters) uint64) float64 {
	a, b := tr.at(from).st.Counters, tr.at(to).st.Counters
	return float64(f(&b)-f(&a)) / (to - from).Seconds()
}

func (tr *trace) mean(from, to time.Duration, f func(point) float64) float64 {
	var sum float64
	n := 0
	for at := from; at < to; at += time.Second {
		sum += f(tr.at(at))
		n++
	}
	return sum / float64(n)
}

func (tr *trace) all(from, to time.Duration, ok func(point) bool) bool {
	for at := from; at < to; at += time.Second {
		if !ok(tr.at(at)) {
			return false
		}
	}
	return true
}

func (tr *trace) chat(from, to time.Duration) []Record {
	var out []Record
	for _, r := range tr.e.Truth().Records(from, to) {
		if r.Class == ChatClass {
			out = append(out, r)
		}
	}
	return out
}

func q(rs []Record, p float64, f func(*Record) []time.Duration) time.Duration {
	var xs []float64
	for i := range rs {
		for _, d := range f(&rs[i]) {
			xs = append(xs, d.Seconds())
		}
	}
	return seconds(quantile(xs, p))
}

func ttft(r *Record) []time.Duration {
	if d, ok := r.TTFT(); ok {
		return []time.Duration{d}
	}
	return nil
}
func tpot(r *Record) []time.Duration { return []time.Duration{r.TPOT()} }
func itl(r *Record) []time.Duration  { return r.ITLs }

func gen(c *Counters) uint64         { return c.GenerationTokens }
func preemptions(c *Counters) uint64 { return c.Preemptions }
func waiting(p point) float64        { return float64(p.st.Waiting) }
func running(p point) float64        { return float64(p.st.Running) }
func kvUsage(p point) float64        { return p.st.KVUsage }

func stepTime(tr *trace, from, to time.Duration) time.Duration {
	a, b := tr.at(from).st.Counters, tr.at(to).st.Counters
	busy := (b.PrefillBusy + b.DecodeBusy) - (a.PrefillBusy + a.DecodeBusy)
	return busy / time.Duration(b.Steps-a.Steps)
}

// healthyBaseline checks what every lever test compares against.
func healthyBaseline(t *testing.T, tr *trace) {
	t.Helper()
	if tr.perSec(0, leverStart, preemptions) != 0 || tr.mean(baseFrom, leverStart, waiting) > 2 || tr.mean(baseFrom, leverStart, kvUsage) > 0.5 {
		t.Fatal("the healthy baseline is not healthy")
	}
}

func TestLevers(t *testing.T) {
	for _, tc := range []struct {
		lever Lever
		dur   time.Duration
		check func(t *testing.T, tr *trace)
	}{
		{QueueGrowth, 60 * time.Second, checkQueueGrowth},
		{KVPreemption, 90 * time.Second, checkKVPreemption},
		{PrefillInterference, 90 * time.Second, checkPrefillInterference},
		{KVMonopoly, 140 * time.Second, checkKVMonopoly},
		{PrefixCacheCollapse, 60 * time.Second, checkPrefixCacheCollapse},
		{DecodeSaturation, 90 * time.Second, checkDecodeSaturation},
		{GPUThrottling, 90 * time.Second, checkGPUThrottling},
		{EngineStall, 70 * time.Second, checkEngineStall},
	} {
		t.Run(string(tc.lever), func(t *testing.T) {
			t.Parallel()
			tr := runLever(t, tc.lever, tc.dur)
			healthyBaseline(t, tr)
			tc.check(t, tr)
		})
	}
}

func checkQueueGrowth(t *testing.T, tr *trace) {
	w := []float64{waiting(tr.at(sec(60))), waiting(tr.at(sec(80))), waiting(tr.at(sec(100)))}
	if !(w[0] > 50 && w[1] > 1.25*w[0] && w[2] > 1.25*w[1]) {
		t.Errorf("waiting at 60s/80s/100s = %v, want steady growth", w)
	}
	first, second := tr.perSec(sec(60), sec(80), gen), tr.perSec(sec(80), sec(100), gen)
	if second > 1.1*first || second < 0.9*first {
		t.Errorf("throughput %0.f then %0.f tok/s, want a plateau", first, second)
	}
	surge := tr.e.base.Levers.SurgeFactor
	if ratio := second / tr.perSec(baseFrom, leverStart, gen); ratio > 0.7*surge {
		t.Errorf("throughput grew %.1fx under a %.0fx surge, want capacity-bound", ratio, surge)
	}
	cap := tr.e.base.Engine.MaxNumSeqs
	// A step whose prefill chunk takes the whole budget admits nobody, so
	// slots can stay free for a few steps.
	if r := tr.mean(sec(50), sec(100), running); r < 0.97*float64(cap) {
		t.Errorf("%.1f running on average, want the ceiling of %d", r, cap)
	}
	if tr.perSec(leverStart, sec(100), preemptions) != 0 {
		t.Error("queue growth preempted")
	}
}

func checkKVPreemption(t *testing.T, tr *trace) {
	from, to := sec(70), sec(130)
	if tr.perSec(from, to, preemptions) == 0 || tr.perSec(from, to, func(c *Counters) uint64 { return c.RecomputedTokens }) == 0 {
		t.Fatal("no preemptions or no recomputation under KV pressure")
	}
	if u := tr.mean(from, to, kvUsage); u < 0.9 {
		t.Errorf("mean KV usage %.2f, want near 1", u)
	}
	var recomputed int
	for _, r := range tr.e.Truth().Records(from, to) {
		if r.Preemptions > 0 {
			recomputed += r.RecomputedTokens
		}
	}
	if recomputed == 0 {
		t.Error("preempted requests' records show no recomputed tokens")
	}
	if base, now := q(tr.chat(baseFrom, leverStart), 0.99, itl), q(tr.chat(from, to), 0.99, itl); now <= base {
		t.Errorf("ITL p99 %v vs %v healthy, want the preemption gaps to show", now, base)
	}
}

func checkPrefillInterference(t *testing.T, tr *trace) {
	from, to := sec(60), sec(130)
	prompt := func(c *Counters) uint64 { return c.PromptTokens }
	if base, now := tr.perSec(baseFrom, leverStart, prompt), tr.perSec(from, to, prompt); now < 1.3*base {
		t.Errorf("prompt tokens/s %.0f vs %.0f healthy, want a jump", now, base)
	}
	if base, now := q(tr.chat(baseFrom, leverStart), 0.99, itl), q(tr.chat(from, to), 0.99, itl); now < base*13/10 {
		t.Errorf("chat ITL p99 %v vs %v healthy, want the tail to break", now, base)
	}
	cap := float64(tr.e.base.Engine.MaxNumSeqs)
	if !tr.all(from, to, func(p point) bool { return waiting(p) < cap/4 }) || tr.mean(sec(100), to, waiting) > tr.mean(from, sec(100), waiting)+5 {
		t.Error("the queue grows under prefill interference")
	}
	if tr.perSec(leverStart, to, preemptions) != 0 {
		t.Error("prefill interference preempted")
	}
}

func checkKVMonopoly(t *testing.T, tr *trace) {
	from, to := sec(100), sec(180)
	if u := tr.mean(from, to, kvUsage); u < 0.95 {
		t.Errorf("mean KV usage %.2f, want the cache full", u)
	}
	if !tr.all(from, to, func(p point) bool { return p.st.Waiting > 0 }) {
		t.Error("nothing waits although the cache is full")
	}
	if r, cap := tr.mean(from, to, running), float64(tr.e.base.Engine.MaxNumSeqs); r > cap/2 {
		t.Errorf("%.0f running of max_num_seqs %.0f, want few", r, cap)
	}
	if base, now := tr.perSec(baseFrom, leverStart, gen), tr.perSec(from, to, gen); now > 0.75*base {
		t.Errorf("throughput %.0f vs %.0f healthy tok/s, want low", now, base)
	}
	if tr.perSec(leverStart, to, preemptions) != 0 {
		t.Error("the monopoly preempted")
	}
	long := tr.e.base.Levers.LongContext.Name
	held := 0
	for _, r := range tr.e.running {
		if tr.e.classes[r.class].spec.Name == long {
			held += len(r.blocks)
		}
	}
	if share := float64(held) / float64(tr.e.kv.used); share < 0.7 {
		t.Errorf("long-context requests hold %.0f%% of the used blocks, want most", 100*share)
	}
}

func checkPrefixCacheCollapse(t *testing.T, tr *trace) {
	from, to := sec(50), sec(100)
	ratio := func(a, b time.Duration) float64 {
		hits := tr.perSec(a, b, func(c *Counters) uint64 { return c.PrefixHits })
		return hits / tr.perSec(a, b, func(c *Counters) uint64 { return c.PrefixQueries })
	}
	if base, now := ratio(baseFrom, leverStart), ratio(from, to); base < 0.2 || now > 0.1*base {
		t.Errorf("prefix hit ratio %.2f vs %.2f healthy, want a collapse", now, base)
	}
	work := func(a, b time.Duration) float64 {
		return tr.perSec(a, b, func(c *Counters) uint64 { return c.PrefillTokens }) / tr.perSec(a, b, func(c *Counters) uint64 { return c.PromptTokens })
	}
	if base, now := work(baseFrom, leverStart), work(from, to); now < 1.3*base {
		t.Errorf("computed prefill per prompt token %.2f vs %.2f healthy, want more", now, base)
	}
	if base, now := q(tr.chat(baseFrom, leverStart), 0.5, ttft), q(tr.chat(from, to), 0.5, ttft); now < base*12/10 {
		t.Errorf("TTFT p50 %v vs %v healthy, want it up", now, base)
	}
	if tr.mean(from, to, waiting) > 2 || tr.perSec(leverStart, to, preemptions) != 0 {
		t.Error("the collapse overloaded the engine")
	}
}

func checkDecodeSaturation(t *testing.T, tr *trace) {
	from, to := sec(70), sec(130)
	base, now := tr.chat(baseFrom, leverStart), tr.chat(from, to)
	if b, n := q(base, 0.99, tpot), q(now, 0.99, tpot); n < b*16/10 {
		t.Errorf("TPOT p99 %v vs %v healthy, want the tail to break", n, b)
	}
	if b, n := q(base, 0.5, itl), q(now, 0.5, itl); n < b*3/2 {
		t.Errorf("ITL p50 %v vs %v healthy, want slower decode steps", n, b)
	}
	// Fine against the DESIGN's chat SLO of 500ms: no queueing, only the
	// longest prompts wait for a few slower steps.
	if p, w := q(now, 0.95, ttft), q(now, 0.99, func(r *Record) []time.Duration { return []time.Duration{r.Queue()} }); p > 500*time.Millisecond || w > 500*time.Millisecond {
		t.Errorf("TTFT p95 %v, queue time p99 %v, want TTFT fine", p, w)
	}
	healthyCap := tr.e.base.Engine.MaxNumSeqs
	if tr.all(from, to, func(p point) bool { return p.st.Running <= healthyCap }) {
		t.Errorf("the batch never grew beyond the healthy cap of %d", healthyCap)
	}
	if w, r := tr.mean(from, to, waiting), tr.mean(from, to, running); w > 0.05*r {
		t.Errorf("%.1f waiting for %.0f running, want a flat queue", w, r)
	}
}

func checkGPUThrottling(t *testing.T, tr *trace) {
	from, to := sec(90), sec(130)
	spec := tr.e.base.GPU
	if !tr.all(baseFrom, leverStart, func(p point) bool { return len(p.gpu.Throttle) == 0 && p.gpu.SMClockMHz == spec.MaxSMClockMHz }) {
		t.Fatal("the healthy GPU throttles")
	}
	if !tr.all(from, to, func(p point) bool { return slices.Contains(p.gpu.Throttle, ReasonSWThermal) }) {
		t.Error("no thermal slowdown reason after the cooling failure")
	}
	if clk := tr.mean(from, to, func(p point) float64 { return p.gpu.SMClockMHz }); clk > 0.9*spec.MaxSMClockMHz {
		t.Errorf("mean SM clock %.0f MHz, want well under %.0f", clk, spec.MaxSMClockMHz)
	}
	if temp := tr.at(to).gpu.TempC; temp < spec.SlowdownC-1 {
		t.Errorf("temperature %.1f, want at the slowdown point", temp)
	}
	if base, now := stepTime(tr, baseFrom, leverStart), stepTime(tr, from, to); now < base*115/100 {
		t.Errorf("mean step %v vs %v healthy, want slower", now, base)
	}
}

func checkEngineStall(t *testing.T, tr *trace) {
	end := leverStart + 70*time.Second
	if tr.perSec(leverStart+time.Second, end, gen) != 0 {
		t.Error("tokens were produced during the stall")
	}
	if !tr.all(leverStart+time.Second, end, func(p point) bool { return p.st.Running+p.st.Waiting > 0 }) {
		t.Error("no requests sat in the stalled engine")
	}
	var failed, total int
	for _, r := range tr.e.Truth().Records(end, end+5*time.Second) {
		total++
		if r.Failed() {
			failed++
		}
	}
	for _, r := range tr.e.Truth().Records(0, leverStart) {
		if r.Failed() {
			t.Fatal("healthy traffic failed")
		}
	}
	c := tr.at(end + 5*time.Second).st.Counters
	if total == 0 || float64(failed)/float64(total) < 0.3 || c.Finished[reasonIndex(FinishError)] == 0 || c.Finished[reasonIndex(FinishAbort)] == 0 {
		t.Errorf("%d of %d failed after recovery (errors %d, aborts %d), want an error and abort burst",
			failed, total, c.Finished[reasonIndex(FinishError)], c.Finished[reasonIndex(FinishAbort)])
	}
}
