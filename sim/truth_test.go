package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

const ms = time.Millisecond

func rec(id uint64, arrival, sched, first, finish time.Duration, out int, itls []time.Duration, reason FinishReason) Record {
	last := first
	for _, d := range itls {
		last += d
	}
	return Record{ID: id, Arrival: arrival, Scheduled: true, FirstScheduled: sched, HasFirstToken: out > 0,
		FirstToken: first, LastToken: last, Finish: finish, OutputTokens: out, ITLs: itls, Reason: reason}
}

func TestEvaluateExactAttainmentAndJointGoodput(t *testing.T) {
	tr := newTruth(TruthOptions{})
	// good everywhere: ttft 100ms, itls 20+30 (tpot 25ms)
	tr.add(rec(1, 0, 10*ms, 100*ms, 200*ms, 3, []time.Duration{20 * ms, 30 * ms}, FinishStop), 0)
	// ttft 600ms fails; tpot 10ms
	tr.add(rec(2, 0, 500*ms, 600*ms, 700*ms, 2, []time.Duration{10 * ms}, FinishLength), 0)
	// one 80ms gap fails itl; tpot (10+80)/2=45ms fine
	tr.add(rec(3, 0, 10*ms, 100*ms, 800*ms, 3, []time.Duration{10 * ms, 80 * ms}, FinishStop), 0)
	// aborted in the queue: no token
	tr.add(Record{ID: 4, Arrival: 0, Finish: 900 * ms, Reason: FinishAbort}, 0)
	// outside the window
	tr.add(rec(5, 0, 10*ms, 100*ms, time.Second, 2, []time.Duration{10 * ms}, FinishStop), 0)

	th := Thresholds{TTFT: 500 * ms, TPOT: 50 * ms, ITL: 50 * ms, Queue: 400 * ms, Error: true}
	rep := tr.Evaluate(0, time.Second, th)
	want := map[Objective]Attainment{
		ObjTTFT:  {Total: 3, Good: 2}, // request 4 has no first token to judge
		ObjTPOT:  {Total: 4, Good: 4}, // 0 for request 4, as vLLM observes it
		ObjITL:   {Total: 5, Good: 4},
		ObjQueue: {Total: 4, Good: 2}, // 500ms and 900ms waits fail
		ObjError: {Total: 4, Good: 3},
	}
	for o, a := range want {
		if rep.Objectives[o] != a {
			t.Errorf("%s: %+v, want %+v", o, rep.Objectives[o], a)
		}
	}
	if _, ok := rep.Objectives[ObjE2E]; ok {
		t.Error("e2e judged without a threshold")
	}
	if rep.Requests != 4 || rep.GoodRequests != 1 || rep.GoodTokens != 3 || rep.GenerationTokens != 8 {
		t.Fatalf("report %+v, want 4 requests, 1 good with 3 tokens, 8 tokens", rep)
	}
	if r := tr.Evaluate(0, time.Second, Thresholds{}); r.GoodRequests != 4 {
		t.Fatalf("no objectives: %d good of %d", r.GoodRequests, r.Requests)
	}
}

func TestTruthHorizonDropsOldRecords(t *testing.T) {
	tr := newTruth(TruthOptions{Horizon: 10 * time.Second})
	for i := range 100 {
		at := time.Duration(i) * time.Second
		tr.add(Record{ID: uint64(i), Finish: at}, at)
	}
	if tr.Len() > 20 || tr.Dropped() < 80 {
		t.Fatalf("holding %d records, dropped %d; want about the last 10s", tr.Len(), tr.Dropped())
	}
	if got := tr.Records(90*time.Second, 100*time.Second); len(got) != 10 || got[0].ID != 90 {
		t.Fatalf("recent window lost records: %d", len(got))
	}
}

func TestTruthLogsJSONLines(t *testing.T) {
	var buf bytes.Buffer
	cfg := DefaultConfig()
	cfg.Truth.Log = &buf
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.Advance(20 * time.Second)
	if err := e.Drain(time.Minute); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&buf)
	n := 0
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		if _, ok := line["finish_reason"].(string); !ok {
			t.Fatalf("line %d has no finish_reason: %s", n+1, sc.Bytes())
		}
		n++
	}
	if n == 0 || n != e.Truth().Len() || e.Truth().Err() != nil {
		t.Fatalf("%d lines for %d records (err %v)", n, e.Truth().Len(), e.Truth().Err())
	}
}
