package capacity

import (
	"errors"
	"fmt"
	"math"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// Judged is one point judged against an SLO.
type Judged struct {
	Point
	// Exact is true when goodput comes from the file's per-request data;
	// otherwise each objective's percentile was judged and the point's
	// whole throughput counts as good when every one met its threshold.
	Exact bool
	// Attainment per objective, in SLO order: the share of requests
	// meeting it (Exact), or 1/0 for a percentile met or missed.
	Attainment []float64
	Met        bool
	Goodput    float64 // output tokens/s of requests meeting every objective
}

// Result is a sweep judged against one SLO.
type Result struct {
	Tool   Tool
	SLO    goodput.SLO
	Points []Judged
	// Knee indexes the point with the highest goodput (ties to the lower
	// rate).
	Knee int
	// KneeReached is false when the knee is the sweep's last point:
	// goodput was still rising, so the true knee lies at or beyond it and
	// its goodput is a lower bound.
	KneeReached bool
	// Safe indexes the highest-rate point that met the SLO; -1 when none.
	Safe int
}

// KneePoint is the point at the knee.
func (r *Result) KneePoint() *Judged { return &r.Points[r.Knee] }

// Judge judges every point of the sweep against slo.
func Judge(sw *Sweep, slo goodput.SLO) (*Result, error) {
	if sw == nil || len(sw.Points) == 0 {
		return nil, errors.New("empty sweep")
	}
	if len(slo.Objectives) == 0 {
		return nil, fmt.Errorf("SLO %q has no objectives", slo.Name)
	}
	for _, o := range slo.Objectives {
		if o.Kind == goodput.KindQueue {
			return nil, fmt.Errorf("SLO %q: load generators do not report queue time; judge a sweep on ttft, tpot, itl, e2e or error", slo.Name)
		}
		if !(o.Target > 0 && o.Target < 1) {
			return nil, fmt.Errorf("SLO %q: %s target %v is not in (0,1)", slo.Name, o.Kind, o.Target)
		}
	}
	res := &Result{Tool: sw.Tool, SLO: slo, Safe: -1}
	steps := make([]goodput.SweepStep, len(sw.Points))
	for i, p := range sw.Points {
		var (
			j   Judged
			err error
		)
		if p.Requests != nil {
			j, err = judgeExact(p, slo)
		} else {
			j, err = judgePercentiles(p, slo)
		}
		if err != nil {
			return nil, fmt.Errorf("round %d (%g req/s, %s): %w", p.Round, p.Rate, p.Source, err)
		}
		res.Points = append(res.Points, j)
		steps[i] = goodput.SweepStep{Rate: p.Rate, Throughput: p.Throughput, Goodput: j.Goodput}
		if j.Met {
			res.Safe = i
		}
	}
	knee, _ := goodput.Knee(steps)
	for i, s := range steps {
		if s == knee {
			res.Knee = i
			break
		}
	}
	res.KneeReached = res.Knee < len(steps)-1
	return res, nil
}

func latencyOf(r Request, k goodput.Kind) float64 {
	switch k {
	case goodput.KindTTFT:
		return r.TTFT
	case goodput.KindTPOT:
		return r.TPOT
	case goodput.KindITL:
		return r.ITL
	case goodput.KindE2E:
		return r.E2E
	}
	return math.NaN()
}

func judgeExact(p Point, slo goodput.SLO) (Judged, error) {
	j := Judged{Point: p, Exact: true, Met: true}
	good := make([]bool, len(p.Requests))
	for i, r := range p.Requests {
		good[i] = !r.Failed
	}
	for _, o := range slo.Objectives {
		var judged, met float64
		for i, r := range p.Requests {
			if o.Kind == goodput.KindError {
				judged++
				if !r.Failed {
					met++
				}
				continue
			}
			if r.Failed {
				continue
			}
			v := latencyOf(r, o.Kind)
			if math.IsNaN(v) {
				return j, fmt.Errorf("the per-request data has no %s", o.Kind)
			}
			judged++
			if v <= o.Threshold {
				met++
			} else {
				good[i] = false
			}
		}
		a := 0.0
		if judged > 0 {
			a = met / judged
		}
		j.Attainment = append(j.Attainment, a)
		if judged == 0 || a < o.Target {
			j.Met = false
		}
	}
	var tokens float64
	for i, r := range p.Requests {
		if good[i] {
			tokens += r.OutputTokens
		}
	}
	j.Goodput = tokens / p.Duration
	return j, nil
}

func judgePercentiles(p Point, slo goodput.SLO) (Judged, error) {
	j := Judged{Point: p, Met: true}
	for _, o := range slo.Objectives {
		if o.Kind == goodput.KindError {
			return j, errors.New("the file has no per-request outcomes to judge an error objective on; drop it or give a file with per-request data")
		}
		pct := math.Round(o.Target*1000) / 10 // 0.99 → 99, 0.999 → 99.9
		v, ok := p.Percentile(o.Kind, pct)
		if !ok {
			return j, fmt.Errorf("the file has no P%g %s to judge the %s objective on", pct, o.Kind, o.Kind)
		}
		if v <= o.Threshold {
			j.Attainment = append(j.Attainment, 1)
		} else {
			j.Attainment = append(j.Attainment, 0)
			j.Met = false
		}
	}
	if j.Met {
		j.Goodput = p.Throughput
	}
	return j, nil
}

// Sizing is what the knee means for a fleet.
type Sizing struct {
	Peak     float64 // goodput needed at peak, tok/s; 0 when not asked
	Replicas int
	// HourlyCost is a replica's price; CostPerMillion the cost of a
	// million good tokens at the knee. HasCost is false without a price.
	HourlyCost     float64
	CostPerMillion float64
	HasCost        bool
	// JoulesPerToken is GPU energy per good token at the knee; 0 when the
	// file has no energy for the knee's window.
	JoulesPerToken float64
}

// Size sizes a fleet from the knee: replicas for peak tok/s of goodput,
// and the cost per million good tokens at hourly per replica (<= 0: none).
func (r *Result) Size(peak, hourly float64) (Sizing, error) {
	k := r.KneePoint()
	s := Sizing{Peak: peak}
	if peak > 0 {
		n, err := goodput.Replicas(peak, k.Goodput)
		if err != nil {
			return s, fmt.Errorf("replicas: %w", err)
		}
		s.Replicas = n
	}
	if hourly > 0 {
		s.HourlyCost = hourly
		s.CostPerMillion, s.HasCost = goodput.CostPerMillionGoodTokens(hourly, k.Goodput)
	}
	if good := k.Goodput * k.Duration; k.EnergyJoules > 0 && good > 0 {
		s.JoulesPerToken = k.EnergyJoules / good
	}
	return s, nil
}

// Compare is the regression gate: it lists how cur regressed from base.
// The knee regressed when it moved to a lower rate, or when its goodput
// fell by more than maxDrop (0.05 is 5 %). Empty means cur passes.
func Compare(base, cur *Result, maxDrop float64) []string {
	var out []string
	b, c := base.KneePoint(), cur.KneePoint()
	if c.Rate < b.Rate {
		out = append(out, fmt.Sprintf("the knee moved to a lower rate: %g req/s (round %d), was %g req/s (round %d)",
			c.Rate, c.Round, b.Rate, b.Round))
	}
	if c.Goodput < b.Goodput*(1-maxDrop) {
		out = append(out, fmt.Sprintf("goodput at the knee fell %.1f%%: %s tok/s, was %s tok/s (allowed: %.1f%%)",
			100*(1-c.Goodput/b.Goodput), Thousands(c.Goodput), Thousands(b.Goodput), 100*maxDrop))
	}
	return out
}
