package goodput

import (
	"testing"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// BenchmarkTrackerUpdate measures one collection cycle of one target in
// steady state: 3 models with vLLM V1 bucket layouts, each matched by 5
// SLOs of 5 objectives (75 objectives, thresholds on and between bounds).
// Each iteration first advances the snapshot's counters in place (a few
// hundred float additions) so that every Update sees real traffic.
func BenchmarkTrackerUpdate(b *testing.B) {
	kinds := []Kind{KindTTFT, KindTPOT, KindITL, KindE2E, KindQueue, KindError}
	thresholds := map[Kind][]float64{
		KindTTFT:  {0.5, 0.3, 1, 2, 0.2},
		KindTPOT:  {0.05, 0.03, 0.1, 0.2, 0.06},
		KindITL:   {0.05, 0.03, 0.1, 0.2, 0.06},
		KindE2E:   {10, 7, 20, 30, 12},
		KindQueue: {1, 0.2, 2, 5, 3},
	}
	var slos []SLO
	for i := range 5 {
		slo := SLO{Name: string(rune('a' + i))}
		for j := range 5 {
			k := kinds[(i+j)%len(kinds)] // every SLO leaves a different kind out
			o := Objective{Kind: k, Target: 0.99, IncludeAbort: i%2 == 0 && k == KindError}
			if k != KindError {
				o.Threshold = thresholds[k][i]
			}
			slo.Objectives = append(slo.Objectives, o)
		}
		slos = append(slos, slo)
	}
	if err := ValidateSLOs(slos); err != nil {
		b.Fatal(err)
	}

	var reqs []req
	for i := range 1000 {
		f := float64(i%97) / 97
		reqs = append(reqs, req{ttft: 2 * f, tpot: 0.1 * f, e2e: 20 * f, queue: 3 * f, tokens: 1 + i%200})
	}
	s := snap("vllm-0")
	for _, name := range []string{"llama-3.1-8b", "mistral-7b", "qwen2-7b"} {
		m := vllmLike(name).render(reqs)
		m.Finished["error"], m.Finished["abort"] = 3, 5
		s.Models = append(s.Models, m)
	}
	advance := func() {
		for i := range s.Models {
			m := &s.Models[i]
			for _, h := range m.Hists {
				for j := range h.Cumulative {
					h.Cumulative[j] += float64(j)
				}
				h.Count += float64(len(h.Cumulative) + 3)
			}
			m.Finished["stop"] += 20
			m.Finished["error"]++
			m.Finished["abort"]++
			m.Counters[snapshot.GenerationTokens].V += 4000
		}
	}

	tr := NewTracker("vllm-0", slos)
	for range 2 { // baseline, then first interval: the state is allocated
		advance()
		if err := tr.Update(s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		advance()
		if err := tr.Update(s); err != nil {
			b.Fatal(err)
		}
	}
	if j := tr.Model("qwen2-7b").SLOs[0].Joint; !j.Interval.OK || j.Total.Requests.Upper == 0 {
		b.Fatalf("benchmark measured no traffic: %+v", j)
	}
}
