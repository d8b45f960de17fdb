package goodput

import (
	"math"
	"slices"
	"strconv"
)

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
	// Output is the output-length histogram (tokens per request) of the
	// requests counted in Requests, where the engine publishes one:
	// what bounds the good requests' tokens over a window
	// (WindowTokenBounds).
	Output OutputTotals
}

// OutputTotals are the cumulative counts of the engine's per-request
// output-length histogram over the intervals a joint judged, in the
// bucket layout it first had.
type OutputTotals struct {
	// Bounds are the finite bucket bounds; Cum, per bound, the requests
	// with at most that many tokens; Count all of them and Sum their
	// tokens.
	Bounds, Cum []float64
	Count, Sum  float64
	// Unmeasured counts the requests of the judged intervals whose
	// lengths are not in the histogram: the engine had none in that
	// interval, its increase was unusable (a glitch, a sum that is not a
	// finite number) or its layout differed from Bounds. Their tokens are
	// unknown, so no window that holds any of them has token bounds.
	Unmeasured float64
	// The layout's labels and steps, computed once when it is taken (an
	// exposition renders them every scrape without allocating).
	le                   []string
	stepLower, stepUpper []float64
	stepTop              float64
}

// Layout returns, for the layout taken, each finite bound as an
// exposition label value and the steps (see Steps); nil before one is
// taken. The slices belong to o.
func (o *OutputTotals) Layout() (le []string, lower, upper []float64, top float64) {
	return o.le, o.stepLower, o.stepUpper, o.stepTop
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

// noteLayout takes bounds as the layout when none is known yet and
// nothing has been counted, with zero counts.
func (o *OutputTotals) noteLayout(bounds []float64) {
	if len(o.Bounds) == 0 && o.Count == 0 && len(bounds) > 0 {
		o.Bounds = append([]float64(nil), bounds...)
		o.Cum = make([]float64, len(bounds))
		o.le = make([]string, len(bounds))
		for j, b := range bounds {
			o.le[j] = strconv.FormatFloat(b, 'g', -1, 64)
		}
		o.stepLower, o.stepUpper, o.stepTop = o.Steps()
	}
}

// addOutput adds one judged interval's output-length increase (bounds,
// dcum, dcount, dsum; ok false when there is none), for requests that
// finished in it. The first layout is kept: an interval with another is
// unmeasured, so that the cumulative counts never go down or change
// meaning.
func (o *OutputTotals) addOutput(requests float64, ok bool, bounds, dcum []float64, dcount, dsum float64) {
	if ok && len(dcum) == len(bounds) {
		o.noteLayout(bounds)
	}
	if !ok || len(dcum) != len(o.Bounds) || !slices.Equal(bounds, o.Bounds) ||
		!(dsum >= 0) || math.IsInf(dsum, 1) || !(dcount >= 0) || math.IsInf(dcount, 1) {
		o.Unmeasured += max(requests, 0)
		return
	}
	// A sum the buckets cannot hold (fewer tokens than the requests'
	// lower edges allow, or more than their upper edges): the engine's
	// sum is not of these requests (a sum that read NaN is taken as no
	// increase by the tracker). Their lengths are unknown.
	h := lengths{bounds: bounds, cum: dcum, count: dcount}
	if dsum < h.low(dcount)*(1-1e-9) || dsum > h.high(dcount)*(1+1e-9) {
		o.Unmeasured += max(requests, 0)
		return
	}
	for i, c := range dcum {
		// dcum is clamped to [previous bucket, dcount] by the tracker.
		o.Cum[i] += c
	}
	o.Count += dcount
	o.Sum += dsum
}

// Clone returns a copy that does not share the per-objective slice.
func (w WindowTotals) Clone() WindowTotals {
	w.Good = append([]float64(nil), w.Good...)
	w.Judged = append([]float64(nil), w.Judged...)
	w.Output = w.Output.Clone()
	return w
}

// Clone returns a copy that does not share the bucket slices.
func (o OutputTotals) Clone() OutputTotals {
	o.Bounds = append([]float64(nil), o.Bounds...)
	o.Cum = append([]float64(nil), o.Cum...)
	return o
}

// WindowTokenBounds bounds the output tokens of the requests that met
// every objective among those that finished between two readings a
// (earlier) and b of the same joint's totals. It is TokenBounds over the
// window's output-length histogram (b.Output − a.Output) with the
// window's request bounds (WindowBounds) widened by edge requests on
// each side:
//
//	L = max(0, lower − edge)
//	U = min(Δcount, upper + edge + max(0, Δcount − Δrequests))
//
// the last term allowing for a histogram that counted more requests than
// the joint judged (a scrape read between two updates, or a histogram
// back after a scrape without it: they may be good). A histogram that
// counted fewer has no bounds: the tokens of the requests it missed are
// unknown.
// With edge the requests in flight at the window's two ends (running +
// waiting), the true good requests g lie in [L, U] (see WindowBounds),
// and TokenBounds holds for any g in [L, U], so
//
//	WindowTokenBounds(a, b, 0).Lower − edge tokens ≤ true good tokens ≤ WindowTokenBounds(a, b, 0).Upper + edge tokens
//
// where the edge tokens are what the edge requests can carry: the
// difference between WindowTokenBounds(a, b, edge) and (a, b, 0), which
// this function computes exactly. A guarantee as far as WindowBounds is
// one: every objective judges requests and the histogram counts every
// request when it finishes; with a per-token objective the request bounds
// are an estimate and so are these.
//
// The edge tokens are at most edge times the most tokens one request of
// the window can have (the upper edge of its highest occupied bucket).
//
// ok is false when the window has no token bounds: no histogram, or
// requests finished in it whose lengths are unknown (Unmeasured grew, or
// the histogram counted fewer requests than the joint).
func WindowTokenBounds(a, b WindowTotals, edge float64) (Bounds, bool) {
	ob, oa := b.Output, a.Output
	if len(ob.Bounds) == 0 || ob.Unmeasured-oa.Unmeasured > 0 || !(edge >= 0) {
		return Bounds{}, false
	}
	if len(oa.Cum) != 0 && len(oa.Cum) != len(ob.Cum) {
		return Bounds{}, false
	}
	dcum := make([]float64, len(ob.Cum))
	prev := 0.0
	n := ob.Count - oa.Count
	r := b.Requests - a.Requests
	if n < r*(1-1e-6) {
		// The histogram missed requests the joint judged: their
		// lengths are unknown.
		return Bounds{}, false
	}
	for i := range ob.Cum {
		c := ob.Cum[i]
		if len(oa.Cum) != 0 {
			c -= oa.Cum[i]
		}
		// Rounding in the totals must not make a bucket fall.
		c = min(max(c, prev), n)
		dcum[i], prev = c, c
	}
	if !(n > 0) {
		return Bounds{}, true
	}
	rb := WindowBounds(a, b)
	lo := max(rb.Lower-edge, 0)
	hi := min(rb.Upper+edge+max(0, n-r), n)
	return TokenBounds(ob.Bounds, dcum, n, max(ob.Sum-oa.Sum, 0), Bounds{lo / n, hi / n})
}

// Steps are the weights with which the recording rules walk a window's
// output-length buckets (docs/accuracy.md). With lo_i and hi_i the fewest
// and most tokens a request of bucket i can have (as TokenBounds takes
// them; bucket 0 is (−∞, b_0], lo_0 = 0), for each finite bound b_j:
//
//	lower[j] = lo_{j+1} − lo_j
//	upper[j] = hi_{j+1} − hi_j   (0 for the last finite bound)
//
// and top = hi of the last finite bucket. Over a window whose histogram
// increased by C_j at b_j and n in all, the fewest tokens k requests can
// have and the most m requests can have (without requests past the last
// bound) are
//
//	Low(k)  = Σ_j lower[j] · max(0, k − C_j)
//	High(m) = top · m − Σ_j upper[j] · max(0, C_j − (n − m))
//
// which is what TokenBounds computes bucket by bucket, written as sums of
// clamped differences that PromQL can take over label sets.
func (o OutputTotals) Steps() (lower, upper []float64, top float64) {
	h := lengths{bounds: o.Bounds, cum: make([]float64, len(o.Bounds))}
	lower = make([]float64, len(o.Bounds))
	upper = make([]float64, len(o.Bounds))
	for j := range o.Bounds {
		_, lo, hi := h.bucket(j)
		_, nextLo, nextHi := h.bucket(j + 1)
		lower[j] = nextLo - lo
		if j+1 < len(o.Bounds) {
			upper[j] = nextHi - hi
		} else {
			top = hi
		}
	}
	return lower, upper, top
}
