package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Dist is a token-length distribution: a constant, or a lognormal with a
// median and a shape, clamped to [Min, Max]. Lognormals give the heavy
// right tail real prompt and output lengths have.
type Dist struct {
	// Median of the lognormal, or the constant when Sigma is 0.
	Median float64
	// Sigma is the standard deviation of the underlying normal.
	Sigma float64
	// Min and Max clamp a sample; Max 0 means no upper cap.
	Min, Max int
}

// Const is a distribution that always gives n.
func Const(n int) Dist { return Dist{Median: float64(n), Min: n, Max: n} }

// LogNormal is a lognormal with the given median and sigma, clamped.
func LogNormal(median, sigma float64, lo, hi int) Dist {
	return Dist{Median: median, Sigma: sigma, Min: lo, Max: hi}
}

// Sample draws one length.
func (d Dist) Sample(r *rand.Rand) int {
	v := d.Median
	if d.Sigma > 0 {
		v = d.Median * math.Exp(d.Sigma*r.NormFloat64())
	}
	n := int(math.Round(v))
	if n < d.Min {
		n = d.Min
	}
	if d.Max > 0 && n > d.Max {
		n = d.Max
	}
	return n
}

// Scale returns the distribution with its median and cap multiplied by f.
func (d Dist) Scale(f float64) Dist {
	d.Median *= f
	if d.Max > 0 {
		d.Max = int(math.Round(float64(d.Max) * f))
	}
	return d
}

func (d Dist) validate(name string) error {
	switch {
	case d.Median <= 0 || math.IsNaN(d.Median):
		return fmt.Errorf("%s: median must be positive", name)
	case d.Sigma < 0:
		return fmt.Errorf("%s: sigma must not be negative", name)
	case d.Min < 0 || (d.Max > 0 && d.Max < d.Min):
		return fmt.Errorf("%s: need 0 <= min <= max", name)
	}
	return nil
}
