package goodput

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata/")

// reportSnapshots is a 5-minute window of one vLLM target serving four
// models: one judged by two SLOs, one without a TPOT histogram, one that
// measures nothing (llama.cpp-like) and one no SLO applies to.
func reportSnapshots(t testing.TB) (prev, cur *snapshot.Snapshot, slos []SLO) {
	slos = []SLO{
		{Name: "chat", Match: Match{Model: mustModel(t, "llama.*|qwen.*")}, Objectives: []Objective{
			{Kind: KindTTFT, Threshold: 0.5, Target: 0.99},
			{Kind: KindTPOT, Threshold: 0.05, Target: 0.95},
			{Kind: KindError, Target: 0.99},
		}},
		{Name: "strict", Match: Match{Model: mustModel(t, "llama.*|lfm.*")}, Objectives: []Objective{
			{Kind: KindTTFT, Threshold: 0.3, Target: 0.9},
			{Kind: KindE2E, Threshold: 1, Target: 0.9},
			{Kind: KindError, Target: 0.99, IncludeAbort: true},
		}},
	}
	fast := req{ttft: 0.2, tpot: 0.02, e2e: 0.8, tokens: 100}
	slowStart := req{ttft: 0.4, tpot: 0.02, e2e: 0.8, tokens: 100}
	slowTokens := req{ttft: 0.2, tpot: 0.09, e2e: 1.2, tokens: 300}
	failed := req{ttft: 0.2, tpot: 0.02, e2e: 0.8, tokens: 100, reason: "error"}
	aborted := req{ttft: 0.2, tpot: 0.02, e2e: 0.8, tokens: 100, reason: "abort"}
	window := concat(same(fast, 880), same(slowStart, 60), same(slowTokens, 50), same(failed, 4), same(aborted, 6))
	qwen := vllmLike("qwen2-7b")
	qwen.has[snapshot.TPOT] = false
	lfm := engineModel{name: "lfm2", tokens: true}
	models := func(reqs []req) []snapshot.Model {
		return []snapshot.Model{
			lfm.render(reqs),
			vllmLike("llama-3.1-8b").render(reqs),
			vllmLike("mistral-7b").render(reqs),
			qwen.render(reqs),
		}
	}
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	prev = &snapshot.Snapshot{Target: "vllm-0", Engine: snapshot.VLLM, Time: start, Models: models(same(fast, 500))}
	cur = &snapshot.Snapshot{Target: "vllm-0", Engine: snapshot.VLLM, Time: start.Add(5 * time.Minute),
		Models: models(concat(same(fast, 500), window))}
	return prev, cur, slos
}

func TestBuildReport(t *testing.T) {
	prev, cur, slos := reportSnapshots(t)
	r, err := BuildReport(prev, cur, slos, &Cost{Hourly: 11, Currency: "EUR"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Window != 5*time.Minute || len(r.Rows) != 4 || len(r.Unmatched) != 1 || r.Unmatched[0] != "mistral-7b" {
		t.Fatalf("report window %v, %d rows, unmatched %v; want 5m, 4 rows, [mistral-7b]", r.Window, len(r.Rows), r.Unmatched)
	}
	// llama/chat over 1000 requests: ttft 1000/1000 under 0.5 s, tpot 950
	// under 50 ms, 996 not failed (aborts do not count): lower
	// 1 + 0.95 + 0.996 − 2 = 0.946, upper 0.95.
	if row := r.Rows[0]; row.Model != "lfm2" || row.Joint.Supported || row.Objectives[0].HasAttainment {
		t.Errorf("lfm2 row %s = %+v, want unsupported", row.SLO, row)
	}
	row := r.Rows[1]
	if row.Model != "llama-3.1-8b" || row.SLO != "chat" {
		t.Fatalf("first row %s/%s", row.Model, row.SLO)
	}
	j := row.Joint
	checkNear(t, "attainment lower", j.Attainment.Lower, 0.946)
	checkNear(t, "attainment upper", j.Attainment.Upper, 0.95)
	checkNear(t, "requests", j.Requests, 1000)
	checkNear(t, "req/s lower", j.Lower.RequestsPerSecond, 946.0/300)
	// 110,000 tokens over 300 s at 0.95 and 0.946.
	checkNear(t, "tok/s upper", j.Upper.TokensPerSecond, 110000*0.95/300)
	checkNear(t, "cost at upper goodput", j.Upper.CostPerMillionTokens, 11.0/3600/(110000*0.95/300)*1e6)
	if !j.Lower.HasCost || j.Lower.CostPerMillionTokens <= j.Upper.CostPerMillionTokens {
		t.Errorf("cost at lower goodput %v (%v) should exceed %v", j.Lower.CostPerMillionTokens, j.Lower.HasCost, j.Upper.CostPerMillionTokens)
	}
	// strict on llama: ttft 0.3 s sits between 0.25 and 0.5: 880+50+10 good
	// for sure, 60 at 0.4 s interpolated: 940 + 60·(0.05/0.25) = 952.
	o := r.Rows[2].Objectives[0]
	if r.Rows[2].SLO != "strict" || !near(o.Counts.Good, 952) || !near(o.Counts.Interpolated, 60) || o.Met != true {
		t.Errorf("strict ttft = %+v", o)
	}

	if _, err := BuildReport(cur, prev, slos, nil); err == nil {
		t.Error("BuildReport with the window reversed = nil error")
	}
	other := *cur
	other.Target = "vllm-1"
	if _, err := BuildReport(prev, &other, slos, nil); err == nil {
		t.Error("BuildReport across two targets = nil error")
	}
}

func TestWriteReportGolden(t *testing.T) {
	prev, cur, slos := reportSnapshots(t)
	for _, c := range []struct {
		file string
		cost *Cost
		fix  func(*snapshot.Snapshot)
	}{
		{"report.golden", &Cost{Hourly: 11, Currency: "EUR"}, func(*snapshot.Snapshot) {}},
		{"report-restarted-nocost.golden", nil, func(s *snapshot.Snapshot) { s.Restarted = true }},
	} {
		c.fix(cur)
		r, err := BuildReport(prev, cur, slos, c.cost)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := WriteReport(&got, r); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", c.file)
		if *updateGolden {
			if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s differs (go test -run WriteReportGolden -update to accept):\n%s", path, got.String())
		}
	}
}
