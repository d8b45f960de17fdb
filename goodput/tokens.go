package goodput

import "math"

// TokenBounds bounds the generation tokens of the good requests of one
// interval from the per-request output-length histogram (vLLM's
// request_generation_tokens) and the share of good requests.
//
// The histogram's increase over the interval says that count requests
// finished, cum[i] of them with at most bounds[i] tokens, and sum tokens
// between them all. Token counts are whole numbers, so a request in the
// bucket (bounds[i-1], bounds[i]] has between lo = ⌊bounds[i-1]⌋+1 (0 in
// the first bucket) and hi = ⌊bounds[i]⌋ tokens (no upper limit in the
// +Inf bucket). share says that between L = share.Lower·count and
// U = share.Upper·count of the requests met the SLO.
//
// Let g be the number of good requests (L ≤ g ≤ U) and T their tokens.
//
// Lower bound. T is at least the tokens of the g shortest requests, so at
// least Low(L): the L requests in the lowest buckets, each at its bucket's
// lo. And T = sum − F, where F, the tokens of the count−g failing requests,
// is at most High(count−L): the count−L requests in the highest buckets,
// each at its bucket's hi. So
//
//	T ≥ max(Low(L), sum − High(count−L))
//
// which is the failing requests given the longest outputs the histogram
// allows. Symmetrically, giving them the shortest,
//
//	T ≤ min(High(U), sum − Low(count−U)).
//
// Both are attained by some set of lengths that fits the buckets and the
// sum, so nothing tighter follows from the histogram. L and U need not be
// whole: Low and High take a fraction of the request at the boundary,
// which keeps the bounds valid since g ≥ ⌈L⌉ and Low and High never
// decrease.
//
// The histogram counts a request when it finishes, with all its tokens;
// the generation-token counter counts tokens as they are generated, so
// over an interval it also holds tokens of requests still running and
// misses the earlier tokens of those that finish. The bounds therefore
// use the histogram's own sum, never the counter: they bound the tokens
// of the good requests that finished in the interval, the same requests
// the finish-time histograms judge. Added up over intervals they count
// each request once, when it finishes.
//
// ok is false when the inputs cannot describe an interval (a sum that is
// not a finite non-negative number, mismatched slices); the caller then
// has no bound. Inconsistent but finite inputs (a scrape that read the
// buckets and the sum a request apart) are clamped so that
// 0 ≤ lower ≤ upper ≤ sum.
func TokenBounds(bounds, cum []float64, count, sum float64, share Bounds) (b Bounds, ok bool) {
	if len(bounds) != len(cum) || !(sum >= 0) || math.IsInf(sum, 1) || !(count >= 0) || math.IsInf(count, 1) {
		return Bounds{}, false
	}
	if count == 0 {
		return Bounds{}, true
	}
	l := clamp01(share.Lower) * count
	u := max(clamp01(share.Upper)*count, l)
	h := lengths{bounds: bounds, cum: cum, count: count}
	lower := max(h.low(l), sum-h.high(count-l))
	upper := min(h.high(u), sum-h.low(count-u))
	upper = min(max(upper, 0), sum)
	lower = min(max(lower, 0), upper)
	return Bounds{lower, upper}, true
}

func clamp01(v float64) float64 {
	if !(v > 0) {
		return 0
	}
	return min(v, 1)
}

// lengths is the increase of an output-length histogram.
type lengths struct {
	bounds, cum []float64
	count       float64
}

// bucket returns the number of requests in bucket i (i = len(bounds) is
// the +Inf bucket) and the fewest and most tokens one of them can have.
func (h lengths) bucket(i int) (n, lo, hi float64) {
	prev := 0.0
	lo = 0
	if i > 0 {
		prev = h.cum[i-1]
		lo = math.Floor(h.bounds[i-1]) + 1
	}
	c := h.count
	hi = math.Inf(1)
	if i < len(h.bounds) {
		c = h.cum[i]
		hi = math.Floor(h.bounds[i])
	}
	if i > 0 && i < len(h.bounds) && hi < lo {
		// No whole number fits between two bounds closer than 1; take
		// the bounds themselves.
		lo, hi = h.bounds[i-1], h.bounds[i]
	}
	return max(c-prev, 0), max(lo, 0), hi
}

// low is the fewest tokens k requests can have: the k in the lowest
// buckets, each at its bucket's lower edge.
func (h lengths) low(k float64) float64 {
	total := 0.0
	for i := 0; i <= len(h.bounds) && k > 0; i++ {
		n, lo, _ := h.bucket(i)
		take := min(n, k)
		if take > 0 {
			total += take * lo
		}
		k -= take
	}
	return total
}

// high is the most tokens k requests can have: the k in the highest
// buckets, each at its bucket's upper edge (+Inf in the +Inf bucket).
func (h lengths) high(k float64) float64 {
	total := 0.0
	for i := len(h.bounds); i >= 0 && k > 0; i-- {
		n, _, hi := h.bucket(i)
		take := min(n, k)
		if take > 0 {
			total += take * hi
		}
		k -= take
	}
	return total
}
