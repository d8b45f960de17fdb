package collector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// manyBounds is a vLLM body whose TTFT histogram has n distinct bucket
// bounds, shifted by shift so that every scrape brings new ones, plus a
// sane generation counter.
func manyBounds(n, shift int) []byte {
	var b strings.Builder
	b.WriteString("# TYPE vllm:generation_tokens_total counter\n")
	b.WriteString(`vllm:generation_tokens_total{model_name="m"} 100` + "\n")
	b.WriteString("# TYPE vllm:time_to_first_token_seconds histogram\n")
	for i := range n {
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{le=\"%d.%06d\",model_name=\"m\"} %d\n", shift, i, i)
	}
	fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} %d\n", n)
	fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_sum{model_name=\"m\"} 1\n")
	fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_count{model_name=\"m\"} %d\n", n)
	return []byte(b.String())
}

// Tens of thousands of distinct bucket bounds, new ones every scrape, once
// took 1–10 s a scrape at a 0.9 s timeout and grew memory for good; 50,000
// of them still overran that timeout by up to 0.64 s, the parser caching
// every one of them. The histogram is now left out with an error, the
// rest of the body stands, the parser keeps at most maxBounds bounds and
// caches no series past them, and it looks at the clock every
// deadlineEvery (256) entries, so a parse ends within a few milliseconds
// of work after its deadline.
func TestManyBucketBoundsAreCapped(t *testing.T) {
	const bounds = 50000
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write(manyBounds(bounds, int(n.Add(1))))
	}))
	defer srv.Close()
	const timeout = 900 * time.Millisecond
	sc := newTestScraper(t, srv.URL, snapshot.VLLM, timeout, 32<<20)
	for i := range 4 {
		start := time.Now()
		snap, _, err := sc.Scrape(context.Background())
		if took := time.Since(start); took > timeout+time.Second {
			t.Errorf("scrape %d took %v, over its %v timeout", i, took, timeout)
		}
		if err != nil {
			wantReason(t, err, ReasonTimeout) // acceptable on a starved machine
			continue
		}
		m := snap.Model("m")
		if m == nil || m.Hists[snapshot.TTFT] != nil || !m.Counters[snapshot.GenerationTokens].OK {
			t.Fatalf("scrape %d: want TTFT left out and the counter kept: %+v", i, m)
		}
		if e := familyErr(snap, "vllm:time_to_first_token_seconds"); e == nil || !strings.Contains(e.Error(), "more than 256 distinct bucket bounds") {
			t.Errorf("scrape %d: error %v", i, e)
		}
		h := sc.parser.models["m"].hists[sc.parser.tab.samples["vllm:time_to_first_token_seconds_bucket"].src.id]
		if len(h.bounds) > maxBounds || len(h.index) > maxBounds {
			t.Errorf("scrape %d: %d bounds retained, cap %d", i, len(h.bounds), maxBounds)
		}
		// At most the bounds under the cap and the body's four other
		// series (the counter, +Inf, _sum and _count).
		if c := len(sc.parser.cache); c > maxBounds+4 || len(sc.parser.canon) > maxBounds+4 {
			t.Errorf("scrape %d: %d series cached (%d canonical) for a body past the %d-bound cap", i, c, len(sc.parser.canon), maxBounds)
		}
	}
	// Parsed to the end without a deadline, the same: nothing past the cap
	// is kept, and nothing learnt is listed for forgetting beyond it.
	p, _ := NewParser(snapshot.VLLM, ParseOptions{})
	for i := range 3 {
		if _, err := p.Parse(manyBounds(bounds, i+1), "", time.Unix(int64(i), 0)); err != nil {
			t.Fatal(err)
		}
		if len(p.cache) > maxBounds+4 || len(p.learnt) > maxBounds+4 {
			t.Errorf("parse %d: %d series cached, %d listed as learnt", i, len(p.cache), len(p.learnt))
		}
	}
	// A sane layout afterwards is read again: the first body after the
	// flood still finds the old bounds in place (they are pruned when it
	// ends), the next one is read.
	p, _ = NewParser(snapshot.VLLM, ParseOptions{})
	for i, body := range [][]byte{manyBounds(30000, 1), manyBounds(20, 2), manyBounds(20, 2)} {
		snap, err := p.Parse(body, "", time.Unix(int64(i), 0))
		if err != nil {
			t.Fatal(err)
		}
		if h := snap.Model("m").Hists[snapshot.TTFT]; i == 2 && (h == nil || len(h.Bounds) != 20) {
			t.Errorf("parse %d after the flood: %+v, errors %v", i, h, snap.Errors)
		}
	}
}

// A parse past its deadline stops within deadlineEvery entries and says
// so; the parser reads the next body normally.
func TestParseStopsAtItsDeadline(t *testing.T) {
	p, _ := NewParser(snapshot.VLLM, ParseOptions{})
	p.SetDeadline(time.Now().Add(-time.Second))
	_, err := p.Parse(manyBounds(5000, 1), "", time.Unix(1, 0))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "after 256 entries") {
		t.Fatalf("err = %v, want a deadline error after 256 entries", err)
	}
	p.SetDeadline(time.Time{})
	snap, err := p.Parse(manyBounds(20, 1), "", time.Unix(2, 0))
	if err != nil || snap.Model("m").Hists[snapshot.TTFT] == nil {
		t.Fatalf("next parse: %v", err)
	}
	if len(p.cache) != 24 {
		t.Errorf("%d series cached, want the 24 of the last body", len(p.cache))
	}
}

// After one 100 MB answer (refused at the 32 MiB cap) the target keeps
// no read buffer, and reading it allocated the cap and a piece, not the
// doubling buffer's 64 + 32 + 16 + ... MiB; an announced 100 MB is refused
// before its body is read.
func TestOversizedBodyDoesNotPinMemory(t *testing.T) {
	line := []byte(`vllm:generation_tokens_total{model_name="m"} 1` + "\n")
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		switch n.Add(1) {
		case 1:
			for written := 0; written < 100<<20; written += len(line) {
				if _, err := w.Write(line); err != nil {
					return
				}
			}
			return
		case 2:
			w.Header().Set("Content-Length", strconv.Itoa(100<<20))
			chunk := bytes.Repeat(line, 1<<14)
			for written := 0; written < 100<<20; written += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			return
		}
		w.Write(manyBounds(20, 1))
	}))
	defer srv.Close()
	sc := newTestScraper(t, srv.URL, snapshot.VLLM, 20*time.Second, 32<<20)
	var before, mid runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := sc.Scrape(context.Background())
	wantReason(t, err, ReasonBodyTooLarge)
	runtime.ReadMemStats(&mid)
	if sc.body != nil {
		t.Error("the scraper keeps the refused body")
	}
	if alloc := mid.TotalAlloc - before.TotalAlloc; alloc > 32<<20+4<<20 {
		t.Errorf("reading a 100 MB body under a 32 MiB cap allocated %d MiB, want at most the cap + 4 MiB", alloc>>20)
	}
	_, _, err = sc.Scrape(context.Background())
	wantReason(t, err, ReasonBodyTooLarge)
	if !strings.Contains(err.Error(), "announced") {
		t.Errorf("an announced 100 MB body: %v, want refused on its Content-Length", err)
	}
	var after2 runtime.MemStats
	runtime.ReadMemStats(&after2)
	if alloc := after2.TotalAlloc - mid.TotalAlloc; alloc > 4<<20 {
		t.Errorf("refusing an announced 100 MB body allocated %d MiB", alloc>>20)
	}
	if _, _, err := sc.Scrape(context.Background()); err != nil {
		t.Fatal(err)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	// The 32 MiB buffer, if kept, would show here.
	if grown := int64(after.HeapInuse) - int64(before.HeapInuse); grown > 16<<20 {
		t.Errorf("heap in use grew by %d MiB after the oversized body", grown>>20)
	}
}

// BenchmarkParseShiftingBounds parses bodies of 50,000 bucket bounds, new
// ones every time: the cost of the hostile class per parse, in time and
// bytes allocated, to compare before and after a change.
func BenchmarkParseShiftingBounds(b *testing.B) {
	p, _ := NewParser(snapshot.VLLM, ParseOptions{})
	bodies := [][]byte{manyBounds(50000, 1), manyBounds(50000, 2)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := p.Parse(bodies[i%2], "", time.Unix(int64(i), 0)); err != nil {
			b.Fatal(err)
		}
	}
}

// A model name and a finish reason of 6 KiB are shortened
// (snapshot.CapLabelValue) and the series counted, on every parse; a name
// at the cap is kept whole.
func TestLongLabelValuesAreShortened(t *testing.T) {
	p, err := NewParser(snapshot.VLLM, ParseOptions{ModelLimit: 10})
	if err != nil {
		t.Fatal(err)
	}
	long, reason, fits := strings.Repeat("m", 6<<10), strings.Repeat("r", 6<<10), strings.Repeat("f", 512)
	body := []byte(fmt.Sprintf("vllm:num_requests_running{model_name=%q} 3\n"+
		"vllm:request_success_total{finished_reason=%q,model_name=%q} 7\n"+
		"vllm:num_requests_running{model_name=%q} 1\n", long, reason, fits, fits))
	shortModel, _ := snapshot.CapLabelValue(long)
	shortReason, _ := snapshot.CapLabelValue(reason)
	for range 2 {
		snap, err := p.Parse(body, "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if m := snap.Model(shortModel); m == nil || m.Gauges[snapshot.Running].V != 3 {
			t.Errorf("the long model is not under its shortened name: %v", m)
		}
		m := snap.Model(fits)
		if m == nil || m.Finished[shortReason] != 7 || m.Gauges[snapshot.Running].V != 1 {
			t.Errorf("the 512-byte model with its long reason: %+v", m)
		}
		if snap.Shortened != 2 || snap.ShortenedValue != shortModel {
			t.Errorf("shortened %d, first %q…; want 2, the model", snap.Shortened, snap.ShortenedValue[:10])
		}
	}
}

// A series longer than maxSeriesBytes (a model name of 256 KiB) is left
// out unread, with an error naming its family, on every parse, in both
// the text fast path and textparse's pass; the series around it stand,
// and nothing of it is remembered.
func TestOverlongSeriesAreLeftOut(t *testing.T) {
	huge := strings.Repeat("x", 256<<10)
	body := []byte(fmt.Sprintf("# HELP vllm:num_requests_running %s\n"+
		"vllm:num_requests_running{model_name=%q} 3\n"+
		"vllm:num_requests_running{model_name=\"a\"} 2\n"+
		"vllm:num_requests_waiting{model_name=%q} 4\n"+
		"vllm:num_requests_waiting{model_name=\"a\"} 1\n", huge, huge, huge))
	for _, slowOnly := range []bool{false, true} {
		p, _ := NewParser(snapshot.VLLM, ParseOptions{})
		p.slowOnly = slowOnly
		for i := range 3 {
			snap, err := p.Parse(body, "", time.Unix(int64(i), 0))
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Models) != 1 || snap.Models[0].Name != "a" || snap.Models[0].Gauges[snapshot.Running].V != 2 || snap.Models[0].Gauges[snapshot.Waiting].V != 1 {
				t.Fatalf("slowOnly %v, parse %d: want model a alone (running 2, waiting 1): %+v", slowOnly, i, snap.Models)
			}
			if e := familyErr(snap, "vllm:num_requests_running"); e == nil || !strings.Contains(e.Error(), "2 series left out unread: longer than 16384 bytes") {
				t.Errorf("slowOnly %v, parse %d: error %v (all: %v)", slowOnly, i, e, snap.Errors)
			}
			// Only model a's two series are remembered: neither the long
			// series nor the long HELP line.
			if len(p.cache) != 2 || len(p.comments) != 0 {
				t.Fatalf("%d series and %d comment lines cached, want 2 and 0", len(p.cache), len(p.comments))
			}
		}
	}
}

// Past its state's budget the parser learns no more series: a series
// that does not fit is left out with its family for its model (here the
// running gauge, a sum over many series that would be wrong without
// some of them), with ErrStateBudget on every body, and the state stays
// at its budget parse after parse. Families that fit stand. The old
// parser (a cap of 20,000 series read past it every scrape) reported the
// sum, and its state held the text of every series cached.
func TestSeriesPastTheBudgetAreLeftOutWithTheirFamily(t *testing.T) {
	var b strings.Builder
	b.WriteString("# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 3\n")
	b.WriteString("# TYPE vllm:num_requests_running gauge\n")
	const budget = 64 << 10
	n := budget / slotCost * 2
	for i := range n {
		// One model, many series (an engine label that varies): the
		// gauge of the model is their sum.
		fmt.Fprintf(&b, "vllm:num_requests_running{model_name=\"m\",engine=\"%d\"} %d\n", i, i%7)
	}
	body := []byte(b.String())
	for _, slowOnly := range []bool{false, true} {
		p, _ := NewParser(snapshot.VLLM, ParseOptions{StateBudget: budget})
		p.slowOnly = slowOnly
		for i := range 3 {
			snap, err := p.Parse(body, "", time.Unix(int64(i), 0))
			if err != nil {
				t.Fatal(err)
			}
			m := snap.Model("m")
			if m == nil || m.Gauges[snapshot.Running].OK || m.Gauges[snapshot.Waiting].V != 3 {
				t.Fatalf("slowOnly %v, parse %d: want running left out and waiting 3: %+v", slowOnly, i, m)
			}
			var budgetErr error
			for _, e := range snap.Errors {
				if errors.Is(e, ErrStateBudget) && budgetErr == nil {
					budgetErr = e
				}
			}
			if budgetErr == nil || !strings.Contains(budgetErr.Error(), "series left out, with their families") {
				t.Errorf("slowOnly %v, parse %d: no error for the series past the budget: %v", slowOnly, i, snap.Errors)
			}
			if p.stateBytes() > budget {
				t.Errorf("slowOnly %v, parse %d: state %d bytes, over its budget %d", slowOnly, i, p.stateBytes(), budget)
			}
			if p.stateBytes() < budget-2*slotCost-commentCost {
				t.Errorf("slowOnly %v, parse %d: state %d bytes: the budget %d should be filled, not emptied", slowOnly, i, p.stateBytes(), budget)
			}
		}
	}
}

// What the budget counts for a series, a second spelling and a comment
// line is at least what they take on the heap: a parser that learns
// 30,000 series of long text (300 bytes each, which a parser keyed by
// text kept) grows the live heap by no more than its state's count.
func TestStateCostsAreWhatTheBudgetCounts(t *testing.T) {
	var b strings.Builder
	const n = 30000
	b.WriteString("# HELP vllm:num_requests_running Number of requests.\n# TYPE vllm:num_requests_running gauge\n")
	long := strings.Repeat("z", 250)
	for i := range n {
		fmt.Fprintf(&b, "vllm:num_requests_running{model_name=\"m\",x=\"%s%d\"} %d\n", long, i, i%7)
	}
	body := []byte(b.String())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p, _ := NewParser(snapshot.VLLM, ParseOptions{})
	for i := range 2 {
		if _, err := p.Parse(body, "", time.Unix(int64(i), 0)); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if len(p.canon) != n {
		t.Fatalf("%d series remembered, want %d", len(p.canon), n)
	}
	t.Logf("%d series: live heap +%d bytes (%.0f a series), counted %d", n, grown, float64(grown)/n, p.stateBytes())
	if grown > int64(p.stateBytes()) {
		t.Errorf("live heap grew by %d bytes, more than the %d the budget counts", grown, p.stateBytes())
	}
	runtime.KeepAlive(p)
	runtime.KeepAlive(body)
}

// A body of 50,000 bucket bounds past the cap leaves nothing alive after
// its parse: the slots of the series past the cap were neither cached nor
// linked as guesses, so the heap goes back to what it was.
func TestShiftingBoundsLeaveNoLiveSlots(t *testing.T) {
	p, _ := NewParser(snapshot.VLLM, ParseOptions{})
	if _, err := p.Parse(manyBounds(20, 0), "", time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 4 {
		if _, err := p.Parse(manyBounds(50000, i+1), "", time.Unix(int64(i+1), 0)); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// 50,000 slots with their sorted labels were about 4 MiB a body.
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 1<<20 {
		t.Errorf("heap grew by %.1f MiB after four bodies of 50,000 shifting bounds", float64(grown)/(1<<20))
	}
	runtime.KeepAlive(p)
}
