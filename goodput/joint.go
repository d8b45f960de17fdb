package goodput

// Bounds is a pair of lower and upper bounds on a joint quantity.
type Bounds struct {
	Lower, Upper float64
}

// Scale returns both bounds multiplied by v.
func (b Bounds) Scale(v float64) Bounds { return Bounds{b.Lower * v, b.Upper * v} }

func (b *Bounds) add(o Bounds) {
	b.Lower += o.Lower
	b.Upper += o.Upper
}

// JointBounds returns the Fréchet bounds on the share of requests that meet
// every objective, given the share p[i] that meets each one:
// lower = max(0, Σp − (k−1)), upper = min(p). They hold whatever the
// correlation between objectives; nothing tighter can be said from
// marginals alone. With no p it returns {1, 1}: no objective, no failure.
func JointBounds(p ...float64) Bounds {
	var f frechet
	for _, v := range p {
		f.add(v)
	}
	return f.bounds()
}

// frechet accumulates JointBounds without a slice.
type frechet struct {
	k   int
	sum float64
	min float64
}

func (f *frechet) add(p float64) {
	p = min(max(p, 0), 1)
	if f.k == 0 || p < f.min {
		f.min = p
	}
	f.k++
	f.sum += p
}

// addRange adds an objective whose share is known only to lie in
// [lo, hi]: the lower bound takes lo, the upper hi.
func (f *frechet) addRange(lo, hi float64) {
	lo, hi = min(max(lo, 0), 1), min(max(hi, 0), 1)
	if f.k == 0 || hi < f.min {
		f.min = hi
	}
	f.k++
	f.sum += lo
}

func (f *frechet) bounds() Bounds {
	if f.k == 0 {
		return Bounds{1, 1}
	}
	lower := max(0, f.sum-float64(f.k-1))
	// Rounding in the sum must not put lower above upper.
	return Bounds{min(lower, f.min), f.min}
}
