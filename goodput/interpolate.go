package goodput

import "sort"

// GoodAt estimates how many of count observations of a classic histogram
// (finite upper bounds ascending, cumulative counts per bound) are at or
// under threshold t, and how many of them sat in the bucket that straddles
// t, which is the uncertainty of the estimate.
//
// For a < t < b, two adjacent bounds, good = c(a) + (c(b) − c(a))·(t − a)/(b − a):
// the linear assumption histogram_quantile makes, with a = 0 below the
// first bound. When t is a bound the answer is exact (interpolated = 0).
// Above the last finite bound only the observations under it are surely
// good; the +Inf bucket is counted as not good and reported as
// interpolated, because nothing says where in (last, +Inf) they fell and
// assuming any of them met the objective would flatter the SLO.
//
// t must be positive (Validate ensures it) and the histogram consistent:
// cumulative never decreasing and never above count.
func GoodAt(bounds, cumulative []float64, count, t float64) (good, interpolated float64) {
	i := sort.SearchFloat64s(bounds, t)
	switch {
	case i == len(bounds):
		last := 0.0
		if i > 0 {
			last = cumulative[i-1]
		}
		return last, count - last
	case bounds[i] == t:
		return cumulative[i], 0
	}
	a, ca := 0.0, 0.0
	if i > 0 {
		a, ca = bounds[i-1], cumulative[i-1]
	}
	b, cb := bounds[i], cumulative[i]
	return ca + (cb-ca)*(t-a)/(b-a), cb - ca
}
