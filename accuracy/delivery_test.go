package accuracy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// The engine's spans reach the daemon as the world delivers them
// (DefaultDelivery, seeded): a tenth arrive twice, a twentieth of the
// exports are sent again whole, every interval's spans come in a random
// order cut into several exports with clocks off by up to ±2 s, and in a
// fifth of the intervals the path is troubled (spans up to 4 intervals
// late, some lost), besides a few never sent. The engine's load surges
// and its clients are cut off again and again, so that requests end
// without a first token, and requests are still running at every
// window's end.
//
// The truth is the simulator's per-request records, judged on their own;
// the exact counters are what the receiver folded. In every 30 s window
// in which every span of the window's requests arrived in it and no other
// window's did, exact equals the truth to the request and the token. In
// every other window the difference is exactly the spans that crossed the
// window's edges or never came, judged by the truth (late out, lost, late
// in): never a copy counted twice, never a span misjudged.
func TestExactUnderFaultyDelivery(t *testing.T) {
	slos := []goodput.SLO{
		{Name: "chat", Objectives: []goodput.Objective{obj(goodput.KindTTFT, 0.5, 0.99), obj(goodput.KindTPOT, 0.05, 0.95), obj(goodput.KindError, 0, 0.99)}},
		{Name: "at-finish", Objectives: []goodput.Objective{obj(goodput.KindTPOT, 0.05, 0.95), obj(goodput.KindE2E, 20, 0.9), obj(goodput.KindQueue, 1, 0.95), obj(goodput.KindError, 0, 0.99)}},
	}
	d := DefaultDelivery
	// The load surges for 50 s, every client is then cut off (the
	// requests still queued end without a first token), and 40 s of
	// healthy traffic follow, over and over.
	base := sim.DefaultConfig()
	sc, err := sim.ParseScenario("queue_growth:50s,abort,healthy:40s,repeat")
	if err != nil {
		t.Fatal(err)
	}
	base.Scenario = sc
	steps, err := Run(context.Background(), Options{Base: base, Rates: []float64{4, 8, 16},
		Warmup: 120 * time.Second, Step: 240 * time.Second, SLOs: slos, Delivery: &d, Window: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	WriteDeliveryTable(&table, steps)
	t.Log("\n" + table.String())
	complete, incomplete, copies, unstarted := 0, 0, 0, 0
	for _, s := range steps {
		t.Logf("rate %g: TTFT p99 %v", s.Rate, s.TTFTP99)
		copies += s.Copies
		unstarted += s.NoFirstToken
		for _, r := range s.SLOs {
			if len(r.Windows) != 8 {
				t.Fatalf("rate %g, %s: %d windows, want 8", s.Rate, r.SLO, len(r.Windows))
			}
			for _, w := range r.Windows {
				if !w.Explained() {
					t.Errorf("rate %g, %s, %v–%v: exact %+v is not truth %+v − late %+v − lost %+v + early %+v", s.Rate, r.SLO, w.From, w.To, w.Exact, w.Truth, w.Out, w.Lost, w.In)
				}
				if !w.Complete() {
					incomplete++
					continue
				}
				complete++
				if w.Exact != w.Truth {
					t.Errorf("rate %g, %s, %v–%v: delivery complete, exact %+v, truth %+v", s.Rate, r.SLO, w.From, w.To, w.Exact, w.Truth)
				}
			}
		}
	}
	// The faults must have happened, and both kinds of window be seen.
	if complete == 0 || incomplete == 0 || copies < 100 || unstarted == 0 {
		t.Errorf("%d complete and %d incomplete windows, %d copies, %d requests without a first token: the faults no longer exercise the claim", complete, incomplete, copies, unstarted)
	}
	t.Logf("%d complete windows, %d incomplete, %d copies recognised, %d requests without a first token", complete, incomplete, copies, unstarted)
}
