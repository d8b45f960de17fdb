package exporter

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/otlp"
	"github.com/goodput-exporter/goodput-exporter/sim"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// tourRun plays the demo's engine 0 (vLLM format, seed 1, the default
// tour in testdata/demo-tour.txt, which cmd/exporter's tests keep equal
// to the demo's) on the simulator's virtual clock as the demo shows it:
// speed 10, one scrape and one span delivery per wall-clock second, in
// either order (the demo's two tickers drift), through the daemon's own
// adapter, tracker, OTLP receiver and exact judge. mangle, when set,
// changes the records before their spans are sent. It returns the
// self-check's verdict at every scrape (-1: none yet).
func tourRun(t *testing.T, wall time.Duration, mangle func([]sim.Record) []sim.Record) []float64 {
	t.Helper()
	const speed = 10
	raw, err := os.ReadFile("testdata/demo-tour.txt")
	if err != nil {
		t.Fatal(err)
	}
	tour, err := sim.ParseScenario(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig()
	cfg.Seed = 1
	cfg.Scenario = tour
	eng, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The demo's SLO of its vLLM engine (cmd/exporter demoSLOs).
	slos := []goodput.SLO{{Name: "chat", Objectives: []goodput.Objective{
		{Kind: goodput.KindTTFT, Threshold: 0.5, Target: 0.99},
		{Kind: goodput.KindTPOT, Threshold: 0.05, Target: 0.95},
		{Kind: goodput.KindError, Target: 0.99, IncludeAbort: true}}}}
	e := New(Options{Interval: time.Second, Timeout: time.Second})
	tc := config.Target{Name: "vllm-0", URL: "http://10.0.0.1/metrics", Engine: "vllm", ModelLimit: 10, MaxBodySize: 1 << 24,
		Traces: &config.Traces{ServiceName: "vllm-0"}}
	tg, err := newTarget(tc, time.Second, slos, e)
	if err != nil {
		t.Fatal(err)
	}
	e.targets = map[string]*target{tg.cfg.Name: tg}
	recv := otlp.New(otlp.Options{Sink: e})
	parser, err := collector.NewParser(snapshot.VLLM, collector.ParseOptions{ModelLimit: 100})
	if err != nil {
		t.Fatal(err)
	}
	epoch := time.Unix(1_700_000_000, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	var fed time.Duration
	send := func(now time.Duration) {
		recs := eng.Truth().Records(fed, now)
		fed = now
		if mangle != nil {
			recs = mangle(recs)
		}
		if len(recs) > 0 {
			recv.Consume(netip.Addr{}, sim.Spans(recs, sim.SpanOptions{Service: "vllm-0", Epoch: epoch}))
		}
	}
	var out []float64
	var buf bytes.Buffer
	for w := time.Second; w <= wall; w += time.Second {
		at := w * speed
		eng.AdvanceTo(at)
		spansFirst := rng.IntN(2) == 0
		if spansFirst {
			send(at)
		}
		buf.Reset()
		if err := eng.WriteMetrics(&buf, sim.FormatVLLM); err != nil {
			t.Fatal(err)
		}
		snap, err := parser.Parse(buf.Bytes(), "", epoch.Add(w))
		if err != nil {
			t.Fatal(err)
		}
		snap.Target = "vllm-0"
		tg.mu.Lock()
		tg.state.snap = snap
		if err := tg.tracker.Update(snap); err != nil {
			t.Fatal(err)
		}
		tg.noteBounds(snap)
		v := -1.0
		for _, b := range tg.bounds {
			v = b.verdict
		}
		tg.mu.Unlock()
		out = append(out, v)
		if !spansFirst {
			send(at)
		}
	}
	return out
}

// The demo's default tour, 10 minutes at its default speed (100
// simulated minutes, every lever twice, each followed by its clients cut
// off): the self-check says 1 at every scrape once it has a verdict.
func TestSelfCheckHoldsThroughDemoTour(t *testing.T) {
	wall := 10 * time.Minute
	if raceEnabled || testing.Short() {
		wall = 90 * time.Second // the first four levers
	}
	got := tourRun(t, wall, nil)
	judged := 0
	for i, v := range got {
		switch v {
		case 0:
			t.Errorf("scrape %d (%v simulated): the self-check says 0", i+1, time.Duration(i+1)*10*time.Second)
		case 1:
			judged++
		}
	}
	if judged < len(got)-15 {
		t.Errorf("a verdict at %d of %d scrapes", judged, len(got))
	}
}

// When one side is really wrong it says 0: the same tour with a third of
// the requests' spans lost (the histograms count them, the exact judge
// does not) and with every request's TTFT reported as 0 (the exact judge
// finds requests good that the histograms rightly count as failing).
func TestSelfCheckCatchesAWrongSide(t *testing.T) {
	for _, c := range []struct {
		name   string
		mangle func([]sim.Record) []sim.Record
	}{
		{"spans lost", func(rs []sim.Record) []sim.Record {
			var keep []sim.Record
			for _, r := range rs {
				if r.ID%3 != 0 {
					keep = append(keep, r)
				}
			}
			return keep
		}},
		{"TTFT under-reported", func(rs []sim.Record) []sim.Record {
			for i := range rs {
				if rs[i].HasFirstToken {
					rs[i].Arrival = rs[i].FirstToken
				}
			}
			return rs
		}},
	} {
		got := tourRun(t, 90*time.Second, c.mangle)
		zero := false
		for _, v := range got {
			zero = zero || v == 0
		}
		if !zero {
			t.Errorf("%s: the self-check never said 0: %v", c.name, got)
		}
	}
}
