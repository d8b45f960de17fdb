package accuracy

import (
	"time"

	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// truthSLO is the exact outcome of one SLO over one window.
type truthSLO struct {
	objectives []count // in the SLO's order
	// requests finished in the window, those meeting every objective, and
	// their generated tokens.
	requests, goodRequests, goodTokens float64
	// edge is the share of the window's finished requests that one of the
	// SLO's histograms observed outside the window, or the other way round
	// (TTFT is observed at the first token, the joint outcome at finish):
	// how far the joint truth can sit outside bounds built from marginals
	// of slightly different populations.
	edge float64
}

type count struct{ judged, good float64 }

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// judge evaluates an SLO on per-request truth. Each objective is judged
// over the requests its engine histogram observes in [from, to): TTFT at
// the first token, ITL at each token, the others at finish. The joint
// outcome is over the requests that finished in the window.
func judge(slo goodput.SLO, recs []sim.Record, from, to time.Duration) truthSLO {
	in := func(t time.Duration) bool { return t >= from && t < to }
	out := truthSLO{objectives: make([]count, len(slo.Objectives))}
	hasTTFT := false
	for _, o := range slo.Objectives {
		hasTTFT = hasTTFT || o.Kind == goodput.KindTTFT
	}
	mismatched := 0.0
	for i := range recs {
		r := &recs[i]
		finished := in(r.Finish)
		if hasTTFT && r.HasFirstToken && finished != in(r.FirstToken) {
			mismatched++
		}
		all := true
		for k, o := range slo.Objectives {
			th := seconds(o.Threshold)
			c := &out.objectives[k]
			met := false
			switch o.Kind {
			case goodput.KindTTFT:
				ttft, has := r.TTFT()
				met = has && ttft <= th
				if has && in(r.FirstToken) {
					c.judged++
					c.good += b2f(met)
				}
			case goodput.KindITL:
				met = true
				t := r.FirstToken
				for _, d := range r.ITLs {
					t += d
					met = met && d <= th
					if in(t) {
						c.judged++
						c.good += b2f(d <= th)
					}
				}
			default:
				switch o.Kind {
				case goodput.KindTPOT:
					met = r.TPOT() <= th
				case goodput.KindE2E:
					met = r.E2E() <= th
				case goodput.KindQueue:
					met = r.Queue() <= th
				case goodput.KindError:
					met = r.Reason != sim.FinishError && (!o.IncludeAbort || r.Reason != sim.FinishAbort)
				}
				if finished {
					c.judged++
					c.good += b2f(met)
				}
			}
			all = all && met
		}
		if finished {
			out.requests++
			if all {
				out.goodRequests++
				out.goodTokens += float64(r.OutputTokens)
			}
		}
	}
	if out.requests > 0 {
		out.edge = mismatched / out.requests
	}
	return out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
