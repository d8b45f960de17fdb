package goodput

// WindowTotals are the cumulative counts a joint's bounds over any window
// are drawn from, added up over the intervals the joint judged (an
// interval in which an objective's data glitched is left out of all of
// them). The bounds over a window are WindowBounds of the totals read at
// its two ends: the window's totals, never a sum of per-interval bounds.
type WindowTotals struct {
	// Requests finished (the joint's requests source).
	Requests float64
	// Failed is, summed over the objectives, the requests that may have
	// failed each: judged − good + interpolated. A request failing two
	// objectives is in it twice, which is what makes Requests − Failed a
	// lower bound whatever the correlation between objectives.
	Failed float64
	// Good is, per objective in the SLO's order, the requests that may
	// have met it: good + interpolated (at most the judged).
	Good []float64
	// Judged is, per objective, the requests it judged. A request that
	// finished without being judged (TTFT of one that never got a first
	// token) may have failed it: WindowBounds counts Requests − Judged
	// against the lower bound where positive.
	Judged []float64
}

// WindowBounds bounds the requests that met every objective among those
// that finished between two readings a (earlier) and b of the same
// joint's totals, from the window's counts per objective (Fréchet):
//
//	lower = Δrequests − ΔFailed − Σ_k max(0, Δrequests − ΔJudged_k)
//	upper = min(Δrequests, min_k ΔGood_k)
//
// both at least 0. The bounds hold exactly when every objective judges
// the requests that finish in the window. TTFT (and any objective the
// engine observes before the request finishes) judges requests when they
// get their first token, so a request in flight at the window's start
// may have been judged on it before the window, and one in flight at its
// end may be judged in it without finishing. Each such request moves the
// truth by at most one, so
//
//	lower − edge ≤ true good requests ≤ upper + edge
//
// where edge is the requests in flight (running + waiting) at the
// window's two ends. A finished request that an objective never judged
// (no first token, so no TTFT) counts as failing it, which the lower
// bound allows for with the finished requests its objective did not
// judge. A threshold between bucket bounds widens both by the
// interpolated requests (which Failed and Good include). With a per-token
// objective (itl, or tpot judged per token) the counts of that objective
// are tokens and it enters as its share of the window's requests: then
// the bounds are an estimate, not a guarantee.
func WindowBounds(a, b WindowTotals) Bounds {
	r := b.Requests - a.Requests
	lower := r - (b.Failed - a.Failed)
	upper := r
	// A reading from before the joint judged anything has no
	// per-objective counts: zeros.
	at := func(xs []float64, k int) float64 {
		if k < len(xs) {
			return xs[k]
		}
		return 0
	}
	for k := range b.Good {
		upper = min(upper, b.Good[k]-at(a.Good, k))
	}
	for k := range b.Judged {
		lower -= max(0, r-(b.Judged[k]-at(a.Judged, k)))
	}
	upper = max(upper, 0)
	return Bounds{min(max(lower, 0), upper), upper}
}

func (w *WindowTotals) add(o WindowTotals) {
	w.Requests += o.Requests
	w.Failed += o.Failed
	if len(w.Good) != len(o.Good) {
		w.Good = make([]float64, len(o.Good))
	}
	for k := range o.Good {
		w.Good[k] += o.Good[k]
	}
	if len(w.Judged) != len(o.Judged) {
		w.Judged = make([]float64, len(o.Judged))
	}
	for k := range o.Judged {
		w.Judged[k] += o.Judged[k]
	}
}

// Clone returns a copy that does not share the per-objective slice.
func (w WindowTotals) Clone() WindowTotals {
	w.Good = append([]float64(nil), w.Good...)
	w.Judged = append([]float64(nil), w.Judged...)
	return w
}
