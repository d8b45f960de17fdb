package collector

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/diagnosis"
	"github.com/goodput-exporter/goodput-exporter/sim"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

var nDecode = regexp.MustCompile(`(?m)^llamacpp:n_decode_total .*$`)

// The real b11669 capture taken while four 1,500-token requests ran:
// tokens_predicted_total does not move until they complete, n_decode_total
// rises every step (about 10/s was observed). Scraped every 5 s for 226 s
// as observed, with only n_decode_total advancing, the daemon's verdict
// never raises engine_stall; with n_decode_total frozen too (a hung
// server) it does. Prefix-cache collapse is judged, from
// prompt_tokens_cached_total.
func TestB11669LongGenerationsAreNotAStall(t *testing.T) {
	body := readFixture(t, snapshot.LlamaCPP, "llamacpp-b11669-0.7.0-debian-mid-long-requests.prom")
	for _, hung := range []bool{false, true} {
		p, _ := NewParser(snapshot.LlamaCPP, ParseOptions{DefaultModel: "m"})
		d := diagnosis.New(diagnosis.DefaultSettings())
		t0 := time.Unix(1_800_000_000, 0)
		raised := false
		var v diagnosis.Verdict
		for k := 0; k <= 226/5; k++ {
			steps := 16208.0
			if !hung {
				steps += 10 * 5 * float64(k)
			}
			b := nDecode.ReplaceAll(body, []byte("llamacpp:n_decode_total "+strconv.FormatFloat(steps, 'g', 6, 64)))
			if bytes.Equal(b, body) != (hung || k == 0) {
				t.Fatal("n_decode_total not rewritten")
			}
			now := t0.Add(time.Duration(k) * 5 * time.Second)
			s, err := p.Parse(b, "", now)
			if err != nil {
				t.Fatal(err)
			}
			v = d.Observe(now, s, nil, false)
			raised = raised || v.Modes[diagnosis.EngineStall].Raised
		}
		if raised != hung {
			t.Errorf("hung=%v: engine_stall raised %v (%s)", hung, raised, v.Modes[diagnosis.EngineStall].Evidence)
		}
		if !v.Modes[diagnosis.EngineStall].Supported || !v.Modes[diagnosis.PrefixCacheCollapse].Supported {
			t.Errorf("engine_stall supported %v, prefix_cache_collapse supported %v", v.Modes[diagnosis.EngineStall].Supported, v.Modes[diagnosis.PrefixCacheCollapse].Supported)
		}
	}
}

// The simulator's b11669-like llama.cpp format: four clients each run one
// long generation (60,000 tokens, minutes at batch 4); tokens_predicted_total
// stays flat until they complete, n_decode_total advances every step, and
// engine_stall is never raised.
func TestSimulatedB11669LongGenerationsAreNotAStall(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Workload = sim.Workload{Classes: []sim.Class{{
		Name: "long", Sessions: 4, Prompt: sim.Const(200), Output: sim.Const(60000), MaxTokens: 60000,
	}}}
	e, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := NewParser(snapshot.LlamaCPP, ParseOptions{DefaultModel: "m"})
	d := diagnosis.New(diagnosis.DefaultSettings())
	t0 := time.Unix(1_800_000_000, 0)
	var first, last *snapshot.Model
	for k := 1; k <= 36; k++ {
		e.AdvanceTo(time.Duration(k) * 5 * time.Second)
		var buf bytes.Buffer
		if err := e.WriteMetrics(&buf, sim.FormatLlamaCPP); err != nil {
			t.Fatal(err)
		}
		now := t0.Add(time.Duration(k) * 5 * time.Second)
		s, err := p.Parse(buf.Bytes(), "", now)
		if err != nil || len(s.Models) != 1 {
			t.Fatalf("%v %v", err, s)
		}
		if first == nil {
			first = &s.Models[0]
		}
		last = &s.Models[0]
		v := d.Observe(now, s, nil, false)
		if v.Modes[diagnosis.EngineStall].Raised {
			t.Fatalf("engine_stall raised at %d s: %s", 5*k, v.Modes[diagnosis.EngineStall].Evidence)
		}
	}
	if g := last.Counters[snapshot.GenerationTokens]; !g.OK || g.V != first.Counters[snapshot.GenerationTokens].V {
		t.Errorf("generation tokens moved from %v to %v: the generations were not long enough to test anything", first.Counters[snapshot.GenerationTokens], g)
	}
	if s := last.Counters[snapshot.EngineSteps]; !s.OK || s.V <= first.Counters[snapshot.EngineSteps].V {
		t.Errorf("steps did not advance: %v to %v", first.Counters[snapshot.EngineSteps], s)
	}
}
