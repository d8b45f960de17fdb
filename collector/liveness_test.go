package collector

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync/atomic"
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

// The simulator's llama.cpp format restarts as llama-server b11669 does:
// an engine served 2 minutes after the first (a restart after a short
// uptime) sends a start token larger by those 2 minutes in microseconds
// (its monotonic clock since boot, not Unix time), and its counters start
// again: the scraper files a restart, not a baseline of another process
// and not a glitch. Both processes carry the prefix-cache series.
func TestSimulatedB11669RestartAfterAShortUptime(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	serve := func() (*httptest.Server, string) {
		cfg := sim.DefaultConfig()
		cfg.StartUnix = 0 // from the clock: when this process started
		s, err := sim.NewServer(cfg, sim.ServerOptions{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s.Handler(sim.FormatLlamaCPP))
		t.Cleanup(srv.Close)
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return srv, resp.Header.Get("Process-Start-Time-Unix")
	}
	old, oldToken := serve()
	var target atomic.Value
	target.Store(old.URL)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(target.Load().(string))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Process-Start-Time-Unix", resp.Header.Get("Process-Start-Time-Unix"))
		io.Copy(w, resp.Body)
	}))
	defer proxy.Close()
	sc := newTestScraper(t, proxy.URL, snapshot.LlamaCPP, 5*time.Second, 32<<20)
	scrape := func(what string) *snapshot.Snapshot {
		t.Helper()
		snap, _, err := sc.Scrape(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(snap.Models) != 1 || !snap.Models[0].Counters[snapshot.PrefixCacheQueries].OK || !snap.Models[0].Counters[snapshot.PrefixCacheHits].OK {
			t.Fatalf("%s: no prefix-cache series: %+v", what, snap.Models)
		}
		return snap
	}
	for range 24 { // 2 minutes of the first process, every 5 s
		now = now.Add(5 * time.Second)
		if s := scrape("first process"); s.Restarted {
			t.Fatal("a restart filed while the first process runs")
		}
	}
	before := scrape("first process").Models[0].Counters[snapshot.GenerationTokens].V
	if before == 0 {
		t.Fatal("the first process generated nothing in 2 minutes: nothing to fall")
	}
	fresh, freshToken := serve()
	o, _ := strconv.ParseUint(oldToken, 10, 64)
	f, _ := strconv.ParseUint(freshToken, 10, 64)
	if f-o != 120_000_000 {
		t.Errorf("start tokens %s then %s: want 120 s apart, in microseconds", oldToken, freshToken)
	}
	target.Store(fresh.URL)
	now = now.Add(5 * time.Second)
	s := scrape("restarted process")
	if !s.Restarted || s.Baseline {
		t.Errorf("after the restart: restarted=%v baseline=%v; generation tokens %v then %v",
			s.Restarted, s.Baseline, before, s.Models[0].Counters[snapshot.GenerationTokens].V)
	}
}
