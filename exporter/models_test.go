package exporter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/config"
)

// The pool's arithmetic, worked by hand: 20 models over at most 4
// targets is a share of 5 each.
func TestModelPoolShares(t *testing.T) {
	p := newModelPool(20, 4)
	p.keep(map[string]bool{"a": true, "b": true})
	// b holds its share (5): a may take the other 15, not its model_limit.
	if got := p.reserve("a", 100); got != 15 {
		t.Fatalf("a alone with b: %d, want 15", got)
	}
	// While a's body is read its 15 are held: b keeps its share only.
	if got := p.reserve("b", 100); got != 5 {
		t.Fatalf("b while a reads: %d, want 5", got)
	}
	p.settle("b", 1)
	p.settle("a", 3) // a's body had 3 models
	if got := p.reserve("b", 100); got != 15 {
		t.Fatalf("b once a holds 3 (counted at its share, 5): %d, want 15", got)
	}
	p.settle("b", 15)
	// A new target always gets its share, though the pool is spent.
	p.keep(map[string]bool{"a": true, "b": true, "c": true})
	if got := p.reserve("c", 100); got != 5 {
		t.Fatalf("c after b took the rest: %d, want its share 5", got)
	}
	if got := p.reserve("c", 2); got != 2 {
		t.Fatalf("c's model_limit of 2: %d", got)
	}
	// b left: its 15 are free again.
	p.keep(map[string]bool{"a": true, "c": true})
	p.settle("b", 40) // a scrape of b that ended after it left
	if got := p.reserve("a", 100); got != 15 {
		t.Fatalf("a after b left: %d, want 15 (20 less c's 5)", got)
	}
	if _, ok := p.held["b"]; ok {
		t.Error("a target that left is still counted")
	}
	sum := 0
	for _, h := range p.held {
		sum += h
	}
	if sum != p.total {
		t.Errorf("total %d, the holdings sum to %d", p.total, sum)
	}
	if got := newModelPool(0, 200).reserve("x", 100); got != 100 {
		t.Errorf("no cap: %d, want the model_limit", got)
	}
}

// A hostile engine serving 50 models among three targets of a daemon
// keeping 30 models (a share of 10 each): it reads its share, its other
// models are left out and counted as past model_limit, and the ordinary
// engines keep reading theirs. Once it is alone it reads more; when the
// others come back, it keeps the models it reads (none taken away, its
// series continue) and they get their share.
func TestModelsOverAllTargetsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for i := range 50 {
		fmt.Fprintf(&b, "vllm:num_requests_running{model_name=\"m%03d\"} %d\n", i, i)
	}
	b.WriteString("# TYPE vllm:generation_tokens_total counter\n")
	for i := range 50 {
		fmt.Fprintf(&b, "vllm:generation_tokens_total{model_name=\"m%03d\"} %d\n", i, 1000+i)
	}
	hostile := serveBody(t, []byte(b.String()))
	ordinary := serveBody(t, []byte("vllm:num_requests_running{model_name=\"solo\"} 1\nvllm:generation_tokens_total{model_name=\"solo\"} 7\n"))
	targets := func(withOrdinary bool) Loader {
		return func() (*config.Config, error) {
			cfg, _ := config.Parse(nil)
			ts := []config.Target{{Name: "hostile", URL: hostile.URL, Engine: "vllm"}}
			if withOrdinary {
				ts = append(ts, config.Target{Name: "a", URL: ordinary.URL, Engine: "vllm"}, config.Target{Name: "b", URL: ordinary.URL, Engine: "vllm"})
			}
			return cfg, cfg.AddTargets(ts)
		}
	}
	ex := New(Options{Interval: time.Hour, Timeout: 5 * time.Second, NoJitter: true, MaxTargets: 3, MaxModels: 30, Logger: discardLogger()})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); ex.Wait() }()
	if err := ex.Start(ctx, targets(true)); err != nil {
		t.Fatal(err)
	}
	models := func(name string) []string {
		ex.mu.Lock()
		tg := ex.targets[name]
		ex.mu.Unlock()
		tg.mu.Lock()
		defer tg.mu.Unlock()
		if tg.state.snap == nil {
			return nil
		}
		var out []string
		for _, m := range tg.state.snap.Models {
			out = append(out, m.Name)
		}
		return out
	}
	scrape := func(name string) {
		ex.mu.Lock()
		tg := ex.targets[name]
		ex.mu.Unlock()
		tg.scrape(ctx)
	}
	for deadline := time.Now().Add(10 * time.Second); models("hostile") == nil || models("a") == nil || models("b") == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the targets' first scrapes did not come")
		}
	}
	leftOut := func() float64 {
		ex.mu.Lock()
		c := ex.targets["hostile"].ctr
		ex.mu.Unlock()
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.leftOut[slices.Index(collector.LeftOutReasons, collector.LeftOutModelLimit)]
	}
	want := func(name string, n int) {
		t.Helper()
		got := models(name)
		if len(got) != n {
			t.Fatalf("%s reads %d models %v, want %d", name, len(got), got, n)
		}
		for i, m := range got {
			if name == "hostile" && m != fmt.Sprintf("m%03d", i) {
				t.Fatalf("hostile reads %v, want m000 to m%03d (the first in its body)", got, n-1)
			}
		}
	}
	want("hostile", 10)
	want("a", 1)
	want("b", 1)
	before := leftOut()
	if before != 80 { // 40 models of 2 series each
		t.Errorf("hostile: %v series counted as left out, want 80", before)
	}
	// Alone: 30 models, the first 10 among them.
	if err := ex.Reload(targets(false)); err != nil {
		t.Fatal(err)
	}
	scrape("hostile")
	want("hostile", 30)
	if got := leftOut(); got != before+40 {
		t.Errorf("left out %v after %v, want 40 more", got, before)
	}
	// The others come back: the hostile engine keeps its 30 models (over
	// the pool, by the others' shares), they read theirs.
	if err := ex.Reload(targets(true)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); models("a") == nil || models("b") == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the ordinary targets' first scrapes did not come")
		}
	}
	scrape("hostile")
	want("hostile", 30)
	want("a", 1)
	want("b", 1)
}
