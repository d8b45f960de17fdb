package sim

import (
	"math"
	"slices"
	"time"
)

// Objective names one SLO objective, as the exporter labels it.
type Objective string

// Objectives.
const (
	ObjTTFT  Objective = "ttft"
	ObjTPOT  Objective = "tpot"
	ObjITL   Objective = "itl"
	ObjE2E   Objective = "e2e"
	ObjQueue Objective = "queue"
	ObjError Objective = "error"
)

// Thresholds declare the objectives of an SLO; a zero duration leaves
// that objective out.
type Thresholds struct {
	TTFT, TPOT, ITL, E2E, Queue time.Duration
	// Error makes "did not end in error or abort" an objective.
	Error bool
}

// Attainment counts what one objective judged and how much met it.
type Attainment struct {
	Total, Good int
}

// Ratio is Good/Total, 1 when nothing was judged.
func (a Attainment) Ratio() float64 {
	if a.Total == 0 {
		return 1
	}
	return float64(a.Good) / float64(a.Total)
}

// Report is the exact SLO outcome of the requests that finished in a
// window.
type Report struct {
	From, To         time.Duration
	Requests         int
	GenerationTokens int
	// Objectives holds each declared objective, judged over the same
	// population the engine's histogram observes: TTFT over requests with
	// a first token, ITL over every token after the first (Total counts
	// tokens), the others over every finished request.
	Objectives map[Objective]Attainment
	// GoodRequests met every declared objective at once; for ITL that
	// means no gap above the threshold. GoodTokens are their generated
	// tokens.
	GoodRequests, GoodTokens int
}

// Evaluate judges the requests that finished in [from, to).
func (t *Truth) Evaluate(from, to time.Duration, th Thresholds) Report {
	i, j := t.window(from, to)
	rep := Report{From: from, To: to, Objectives: map[Objective]Attainment{}}
	judge := func(o Objective, on bool, total, good int) {
		if on {
			a := rep.Objectives[o]
			a.Total += total
			a.Good += good
			rep.Objectives[o] = a
		}
	}
	b2i := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	for k := i; k < j; k++ {
		r := &t.recs[k]
		rep.Requests++
		rep.GenerationTokens += r.OutputTokens
		ttft, has := r.TTFT()
		okTTFT := has && ttft <= th.TTFT
		judge(ObjTTFT, th.TTFT > 0 && has, 1, b2i(okTTFT))
		okTPOT := r.TPOT() <= th.TPOT
		judge(ObjTPOT, th.TPOT > 0, 1, b2i(okTPOT))
		goodITL := 0
		for _, d := range r.ITLs {
			goodITL += b2i(d <= th.ITL)
		}
		judge(ObjITL, th.ITL > 0, len(r.ITLs), goodITL)
		okE2E := r.E2E() <= th.E2E
		judge(ObjE2E, th.E2E > 0, 1, b2i(okE2E))
		okQueue := r.Queue() <= th.Queue
		judge(ObjQueue, th.Queue > 0, 1, b2i(okQueue))
		judge(ObjError, th.Error, 1, b2i(!r.Failed()))
		good := (th.TTFT == 0 || okTTFT) && (th.TPOT == 0 || okTPOT) &&
			(th.ITL == 0 || goodITL == len(r.ITLs)) && (th.E2E == 0 || okE2E) &&
			(th.Queue == 0 || okQueue) && (!th.Error || !r.Failed())
		if good {
			rep.GoodRequests++
			rep.GoodTokens += r.OutputTokens
		}
	}
	return rep
}

// quantile is the nearest-rank q-quantile of xs (NaN when empty).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}
