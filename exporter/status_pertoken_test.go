package exporter

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/sim"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// An SGLang engine has no per-request TPOT histogram: TPOT is judged per
// token, and the joint goodput has no lower bound. The status page says
// why, in one phrase, and where exact goodput comes from, instead of a
// bare "0.0 % – 100.0 % of requests". The demo's SGLang engine and SLO.
func TestStatusSaysWhyThereIsNoLowerBound(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed = 1
	eng, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	slos := []goodput.SLO{{Name: "chat-latency", Objectives: []goodput.Objective{
		{Kind: goodput.KindTTFT, Threshold: 0.5, Target: 0.99},
		{Kind: goodput.KindTPOT, Threshold: 0.05, Target: 0.95}}}}
	e := New(Options{Interval: time.Second, Timeout: time.Second})
	tg, err := newTarget(config.Target{Name: "sglang-1", URL: "http://10.0.0.1/metrics", Engine: "sglang", ModelLimit: 10, MaxBodySize: 1 << 24}, time.Second, slos, e)
	if err != nil {
		t.Fatal(err)
	}
	parser, err := collector.NewParser(snapshot.SGLang, collector.ParseOptions{ModelLimit: 100})
	if err != nil {
		t.Fatal(err)
	}
	epoch := time.Unix(1_700_000_000, 0)
	var buf bytes.Buffer
	for s := 1; s <= 30; s++ {
		eng.AdvanceTo(time.Duration(s) * 10 * time.Second)
		buf.Reset()
		if err := eng.WriteMetrics(&buf, sim.FormatSGLang); err != nil {
			t.Fatal(err)
		}
		snap, err := parser.Parse(buf.Bytes(), "", epoch.Add(time.Duration(s)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		snap.Target = "sglang-1"
		if err := tg.tracker.Update(snap); err != nil {
			t.Fatal(err)
		}
	}
	tg.mu.Lock()
	rows, _ := tg.sloStatus("sglang")
	tg.mu.Unlock()
	if len(rows) != 1 {
		t.Fatalf("rows %+v", rows)
	}
	got := rows[0].Goodput
	if !strings.HasPrefix(got, "0.0 % – ") {
		t.Fatalf("goodput %q: the case needs a joint without a lower bound", got)
	}
	if !strings.Contains(got, "no lower bound: TPOT judged per token; exact goodput: the measuring proxy, docs/proxy.md") {
		t.Errorf("goodput %q does not say why it has no lower bound", got)
	}
}
