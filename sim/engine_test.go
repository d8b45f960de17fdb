package sim

import (
	"bytes"
	"testing"
	"time"
)

func mustNew(t testing.TB, cfg Config) *Engine {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A run through every lever, checked at every step, then drained.
func TestInvariantsAcrossLevers(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Scenario, _ = ParseScenario("healthy:10s,kv_preemption:25s,prefill_interference:15s,decode_saturation:15s,engine_stall:10s,prefix_cache_collapse:10s,kv_monopoly:20s,healthy")
	e := mustNew(t, cfg)
	steps := 0
	e.onStep = func(p *stepPlan) {
		steps++
		tokens := 0
		for _, it := range p.items {
			tokens += it.n
			if it.n <= 0 || it.r.state != stateRunning {
				t.Fatalf("step %d schedules request %d with %d tokens in state %d", steps, it.r.id, it.n, it.r.state)
			}
		}
		if budget := e.cfg.Engine.MaxNumBatchedTokens; tokens > budget {
			t.Fatalf("step %d: %d tokens over the budget of %d", steps, tokens, budget)
		}
		if tokens != p.prefillTokens+p.decodeTokens {
			t.Fatalf("step %d: %d tokens, plan counts %d+%d", steps, tokens, p.prefillTokens, p.decodeTokens)
		}
		if len(p.items) > e.cfg.Engine.MaxNumSeqs {
			t.Fatalf("step %d: %d sequences over max_num_seqs %d", steps, len(p.items), e.cfg.Engine.MaxNumSeqs)
		}
		if e.kv.used > e.kv.capacity+e.kv.deficit {
			t.Fatalf("step %d: %d blocks used of %d (deficit %d)", steps, e.kv.used, e.kv.capacity, e.kv.deficit)
		}
		if e.kv.deficit == 0 && e.kv.used > e.kv.capacity {
			t.Fatalf("step %d: %d blocks used of %d", steps, e.kv.used, e.kv.capacity)
		}
		for _, it := range p.items {
			if need := e.kv.blocksFor(it.r.computed + it.n); len(it.r.blocks) < need {
				t.Fatalf("step %d: request %d computes to %d tokens in %d blocks", steps, it.r.id, it.r.computed+it.n, len(it.r.blocks))
			}
		}
	}
	e.AdvanceTo(2 * time.Minute)
	st := e.State()
	if st.Counters.Preemptions == 0 || st.Counters.Finished[reasonIndex(FinishError)] == 0 {
		t.Fatalf("the run did not exercise preemption (%d) and stall errors (%d)", st.Counters.Preemptions, st.Counters.Finished[reasonIndex(FinishError)])
	}
	holders := append([]*request(nil), e.running...)
	checkKV(t, e.kv, holders...)

	if err := e.Drain(10 * time.Minute); err != nil {
		t.Fatal(err)
	}
	st = e.State()
	c := st.Counters
	if st.Running != 0 || st.Waiting != 0 || c.Arrived != c.FinishedTotal() {
		t.Fatalf("after drain: %d running, %d waiting, %d arrived, %d finished", st.Running, st.Waiting, c.Arrived, c.FinishedTotal())
	}
	if uint64(e.Truth().Len()) != c.Arrived {
		t.Fatalf("%d records for %d requests", e.Truth().Len(), c.Arrived)
	}
	if e.kv.used != 0 || e.kv.freeLen != e.kv.capacity {
		t.Fatalf("idle cache: %d used, %d free of %d", e.kv.used, e.kv.freeLen, e.kv.capacity)
	}
	checkKV(t, e.kv)
	if c.GenerationTokens != sumOutput(e.Truth().Records(0, e.Now()+1)) {
		t.Fatal("generation tokens counter disagrees with the records")
	}
}

func sumOutput(rs []Record) uint64 {
	var n uint64
	for _, r := range rs {
		n += uint64(r.OutputTokens)
	}
	return n
}

type expositions struct{ vllm, sglang, llamacpp, dcgm, log, others string }

func capture(t *testing.T, e *Engine, log *bytes.Buffer) expositions {
	t.Helper()
	out := make([]bytes.Buffer, len(Formats)+1)
	for i, f := range Formats {
		if err := e.WriteMetrics(&out[i], f); err != nil {
			t.Fatal(err)
		}
	}
	dcgm := &out[len(Formats)]
	if err := e.WriteGPUMetrics(dcgm); err != nil {
		t.Fatal(err)
	}
	var others string
	for i := 3; i < len(Formats); i++ {
		others += out[i].String()
	}
	return expositions{out[0].String(), out[1].String(), out[2].String(), dcgm.String(), log.String(), others}
}

func runFor(t *testing.T, seed uint64, observe time.Duration) expositions {
	cfg := DefaultConfig()
	cfg.Seed = seed
	cfg.Scenario, _ = ParseScenario("healthy:10s,kv_preemption:20s,gpu_throttling:10s,healthy")
	var log bytes.Buffer
	cfg.Truth.Log = &log
	e := mustNew(t, cfg)
	end := 45 * time.Second
	if observe > 0 {
		// Reading the engine between events must not change it.
		for at := observe; at < end; at += observe {
			e.AdvanceTo(at)
			capture(t, e, &log)
			_ = e.State()
		}
	}
	e.AdvanceTo(end)
	return capture(t, e, &log)
}

func TestDeterministicForASeed(t *testing.T) {
	a, b := runFor(t, 7, 0), runFor(t, 7, 0)
	if a != b {
		t.Fatal("same seed, same calls: output differs")
	}
	if c := runFor(t, 7, 333*time.Millisecond); c != a {
		t.Fatal("observing the engine every 333ms changed its output")
	}
	d := runFor(t, 8, 0)
	if d.vllm == a.vllm || d.log == a.log || d.dcgm == a.dcgm {
		t.Fatal("different seeds gave identical output")
	}
}

// A lever added mid-run leaves the other classes' requests as they were.
func TestLeverKeepsBaselineArrivals(t *testing.T) {
	base := DefaultConfig()
	withLever := DefaultConfig()
	withLever.Scenario, _ = ParseScenario("healthy:5s,prefill_interference:10s,healthy")
	a, b := mustNew(t, base), mustNew(t, withLever)
	a.AdvanceTo(20 * time.Second)
	b.AdvanceTo(20 * time.Second)
	chat := func(e *Engine) []Record {
		var out []Record
		for _, r := range e.Truth().Records(0, time.Hour) {
			if r.Class == ChatClass {
				out = append(out, r)
			}
		}
		return out
	}
	ra, rb := chat(a), chat(b)
	prompts := map[time.Duration]int{}
	for _, r := range ra {
		prompts[r.Arrival] = r.PromptTokens
	}
	same := 0
	for _, r := range rb {
		if p, ok := prompts[r.Arrival]; ok && p == r.PromptTokens {
			same++
		}
	}
	if same < len(rb)*9/10 || len(rb) == 0 {
		t.Fatalf("only %d of %d chat requests kept their arrival and prompt", same, len(rb))
	}
}

func TestConfigValidation(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Engine.MaxNumBatchedTokens = 64
	cfg.Workload.Classes[0].Arrival = "gamma"
	_, err := New(cfg)
	want := "sim config: engine: max num batched tokens 64 must be >= max num seqs 128\nworkload: class \"chat\": unknown arrival \"gamma\" (want poisson, constant or bursty)"
	if err == nil || err.Error() != want {
		t.Fatalf("error\n got: %v\nwant: %s", err, want)
	}
	// Bursty arrivals need a burst size over 1.
	cfg = DefaultConfig()
	cfg.Workload.Classes[0].Arrival = Bursty
	_, err = New(cfg)
	want = "sim config: workload: class \"chat\": bursty arrivals need a burst size over 1 and a gap of at least 0"
	if err == nil || err.Error() != want {
		t.Fatalf("error\n got: %v\nwant: %s", err, want)
	}
}

func TestConstantArrivals(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Workload.Classes[0].Arrival = Constant
	cfg.Workload.Classes[0].Rate = 4
	e := mustNew(t, cfg)
	e.AdvanceTo(10 * time.Second)
	if got := e.State().Counters.Arrived; got != 40 {
		t.Fatalf("%d arrivals by 10s at a constant 4/s, want 40", got)
	}
	for i, r := range e.Truth().Records(0, time.Hour) {
		if i > 0 && r.ID == 0 {
			t.Fatal("record without an id")
		}
		if r.Arrival%(250*time.Millisecond) != 0 {
			t.Fatalf("request %d arrived at %v, off the 250ms grid", r.ID, r.Arrival)
		}
	}
}

func TestMaxTokensEndsWithLength(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Workload.Classes[0].MaxTokens = 50
	cfg.Workload.Classes[0].Output = LogNormal(50, 0.5, 1, 0)
	e := mustNew(t, cfg)
	e.Advance(20 * time.Second)
	var stop, length int
	for _, r := range e.Truth().Records(0, time.Hour) {
		switch {
		case r.Reason == FinishLength && r.OutputTokens == 50:
			length++
		case r.Reason == FinishStop && r.OutputTokens < 50:
			stop++
		default:
			t.Fatalf("request %d: %s after %d tokens with max_tokens 50", r.ID, r.Reason, r.OutputTokens)
		}
	}
	if stop == 0 || length == 0 {
		t.Fatalf("%d stopped, %d hit max_tokens; want both", stop, length)
	}
}

// Behind a client's cap of 50 in flight a surge fills the queue and the
// queue stands: running plus waiting never exceeds 50, reaches it, and
// arrivals beyond it are not sent (the engine counts fewer than offered).
func TestMaxInFlight(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Engine.MaxNumSeqs = 10
	cfg.Workload.ClientTimeout = 0
	cfg.Workload.MaxInFlight = 50
	e := mustNew(t, cfg)
	most := 0
	for at := time.Second; at <= time.Minute; at += time.Second {
		e.AdvanceTo(at)
		n := len(e.running) + e.waiting.len()
		if n > 50 {
			t.Fatalf("at %v: %d in flight, over the cap of 50", at, n)
		}
		most = max(most, n)
	}
	// 10 req/s offered for a minute: about 600 arrivals, far more than
	// 10 running at a time serve.
	if most != 50 || e.c.Arrived >= 500 {
		t.Fatalf("at most %d in flight, %d sent: want the cap reached and arrivals held back", most, e.c.Arrived)
	}
}

// LoadSlowdown 3 with max_num_seqs 10: a step of 10 sequences takes 3
// times the roofline's time, one of 1 sequence 1 times, one of 4
// sequences 1 + 2·3/9 = 1.667 times.
func TestLoadSlowdown(t *testing.T) {
	e := &EngineSpec{MaxNumSeqs: 10, LoadSlowdown: 3}
	for _, c := range []struct {
		n    int
		want float64
	}{{1, 1}, {4, 1 + 2*3.0/9}, {10, 3}, {12, 3}} {
		if got := loadStretch(e, c.n); got < c.want-1e-12 || got > c.want+1e-12 {
			t.Errorf("%d sequences: stretch %v, want %v", c.n, got, c.want)
		}
	}
	// Measured on the engine: the same requests, with and without it.
	cfg := DefaultConfig()
	cfg.Engine.MaxNumSeqs = 10
	plain := mustNew(t, cfg)
	cfg.Engine.LoadSlowdown = 3
	slow := mustNew(t, cfg)
	plain.AdvanceTo(30 * time.Second)
	slow.AdvanceTo(30 * time.Second)
	p, s := plain.State().Counters.GenerationTokens, slow.State().Counters.GenerationTokens
	if !(s < p) {
		t.Errorf("generated %v tokens with the slowdown, %v without: want fewer", s, p)
	}
	cfg.Engine.LoadSlowdown = 0.5
	if _, err := New(cfg); err == nil {
		t.Error("a load slowdown of 0.5 was accepted")
	}
}
