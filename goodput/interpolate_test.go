package goodput

import "testing"

func TestGoodAt(t *testing.T) {
	b := []float64{0.1, 0.25, 0.5, 1}
	c := []float64{10, 40, 70, 90}
	cases := []struct {
		name                       string
		bounds, cum                []float64
		count, t                   float64
		wantGood, wantInterpolated float64
	}{
		{"on a bound", b, c, 100, 0.5, 70, 0},
		{"on the first bound", b, c, 100, 0.1, 10, 0},
		{"on the last bound", b, c, 100, 1, 90, 0},
		// 40 + (70−40)·(0.3−0.25)/(0.5−0.25) = 46, 30 in (0.25, 0.5].
		{"between bounds", b, c, 100, 0.3, 46, 30},
		// 0 + 10·0.05/0.1 = 5: the first bucket starts at 0.
		{"under the first bound", b, c, 100, 0.05, 5, 10},
		// Only the 90 under 1 s are surely good; the 10 in +Inf are uncertain.
		{"above the last bound", b, c, 100, 2, 90, 10},
		{"only an +Inf bucket", nil, nil, 5, 1, 0, 5},
		// SGLang's queue histogram has a bound at 0: 3 + (5−3)·0.05/0.1 = 4.
		{"zero bound", []float64{0, 0.1, 0.2}, []float64{3, 5, 9}, 10, 0.05, 4, 2},
		{"no observations", b, []float64{0, 0, 0, 0}, 0, 0.3, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			good, interp := GoodAt(tc.bounds, tc.cum, tc.count, tc.t)
			checkNear(t, "good", good, tc.wantGood)
			checkNear(t, "interpolated", interp, tc.wantInterpolated)
		})
	}
}

// Bucket counts that grew more than the count in an interval (buckets 3
// and 5 at 1 s and 2 s, count 4): interpolating at 1.9 s gives 3 + 2 x 0.9
// = 4.8 good of 4 judged. The interval keeps 4 of 4, never more good
// than judged.
func TestGoodNeverAboveJudged(t *testing.T) {
	good, interp := GoodAt([]float64{1, 2}, []float64{3, 5}, 4, 1.9)
	if good != 4.8 || interp != 2 {
		t.Fatalf("GoodAt = %v, %v; want 4.8, 2 (the raw interpolation)", good, interp)
	}
	c := withinJudged(Counts{Judged: 4, Good: good, Interpolated: interp})
	if c.Good != 4 || c.Interpolated != 2 {
		t.Errorf("withinJudged = %+v, want good 4, interpolated 2", c)
	}
	if p, ok := c.Attainment(); !ok || p != 1 {
		t.Errorf("attainment %v, want 1", p)
	}
	c = withinJudged(Counts{Judged: 4, Good: -1e-12, Interpolated: 5})
	if c.Good != 0 || c.Interpolated != 4 {
		t.Errorf("withinJudged = %+v, want good 0, interpolated 4", c)
	}
}
