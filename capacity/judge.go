package capacity

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// Judged is one point judged against an SLO.
type Judged struct {
	Point
	// Exact is true when goodput comes from the file's per-request data;
	// otherwise each objective's percentile was judged and the point's
	// whole throughput counts as good when every one met its threshold.
	Exact bool
	// Listed is the number of successful requests the per-request data
	// holds; Sampled is true when that is fewer than the tool counted, so
	// the good share is estimated from a sample.
	Listed  int
	Sampled bool
	// Attainment per objective, in SLO order: the share of requests
	// meeting it (Exact), or 1/0 for a percentile met or missed.
	Attainment []float64
	Met        bool
	// Goodput is output tokens/s of requests meeting every objective:
	// the round's throughput times the share of its successful requests'
	// output tokens that met every objective, so goodput and throughput
	// are over the same requests and goodput never exceeds throughput.
	Goodput float64
	// Repeats are the rounds at this load that were combined into this
	// one, in file order; nil for a load run once. Pooled is true when
	// their requests were pooled and judged as one round; otherwise the
	// round is their mean, met only when every one met the SLO.
	Repeats []Judged
	Pooled  bool
}

// Result is a sweep of one load kind judged against one SLO.
type Result struct {
	Tool    Tool
	Kind    LoadKind
	Setting string
	SLO     goodput.SLO
	// Points holds one round per load, in increasing load: rounds at the
	// same load (repeats, several files of one setting) are one round
	// (Judged.Repeats); rounds without a load come last.
	Points []Judged
	// Knee indexes the point with the highest goodput; of rounds with
	// equal goodput, the one at the lowest load.
	Knee int
	// KneeReached is true only when a round at a higher load than the
	// knee was observed and missed the SLO: then the knee is bracketed.
	// Otherwise goodput may still rise past the last load, and the knee's
	// goodput is a lower bound. It is false too when no round had any
	// goodput: then there is no knee at all.
	KneeReached bool
	// Safe indexes the highest-load point that met the SLO; -1 when none.
	Safe int
}

// KneePoint is the point at the knee.
func (r *Result) KneePoint() *Judged { return &r.Points[r.Knee] }

// Judge judges every point of a sweep of one load kind and one setting
// against slo. A sweep that mixes rate and concurrency rounds, or
// settings, is refused: their knees are on different axes (JudgeEach
// judges each apart). The result does not depend on the order of the
// sweep's points.
func Judge(sw *Sweep, slo goodput.SLO) (*Result, error) {
	if sw == nil || len(sw.Points) == 0 {
		return nil, errors.New("empty sweep")
	}
	if kinds := sw.Kinds(); len(kinds) > 1 {
		n := map[LoadKind]int{}
		for _, p := range sw.Points {
			n[p.Kind]++
		}
		return nil, fmt.Errorf("the files mix a rate sweep (%d rounds) and a concurrency sweep (%d rounds); "+
			"their knees are on different axes, so they are judged apart, never as one sweep", n[LoadRate], n[LoadConcurrency])
	}
	if sets := sw.Settings(); len(sets) > 1 {
		return nil, fmt.Errorf("the files hold sweeps of %d settings (%s); each is judged apart, never as one sweep",
			len(sets), strings.Join(sets, "; "))
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
	res := &Result{Tool: sw.Tool, Kind: sw.Points[0].Kind, Setting: sw.Points[0].Setting, SLO: slo, Safe: -1}
	pts := slices.Clone(sw.Points)
	slices.SortFunc(pts, comparePoints)
	var group []Judged
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		j := group[0]
		if len(group) > 1 {
			var err error
			if j, err = merge(group, slo); err != nil {
				return err
			}
		}
		res.Points = append(res.Points, j)
		group = nil
		return nil
	}
	for _, p := range pts {
		j, err := judgeOne(p, slo)
		if err != nil {
			return nil, fmt.Errorf("round %d (%s, %s): %w", p.Round, LoadText(&p), p.Source, err)
		}
		if len(group) > 0 && !sameLoad(&group[0].Point, &p) {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		group = append(group, j)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	for i := range res.Points {
		res.Points[i].Round = i + 1
	}
	for i := range res.Points {
		j := &res.Points[i]
		if j.NoLoad {
			continue
		}
		if j.Met {
			res.Safe = i
		}
		// the highest goodput; a tie goes to the lower load: the points
		// are in increasing load, and only a strictly higher goodput
		// moves the knee on
		if i == 0 || j.Goodput > res.Points[res.Knee].Goodput {
			res.Knee = i
		}
	}
	if k := res.KneePoint(); k.Goodput > 0 {
		for _, j := range res.Points[res.Knee+1:] {
			if !j.NoLoad && j.Load() > k.Load() && !j.Met {
				res.KneeReached = true
			}
		}
	}
	return res, nil
}

// sameLoad reports rounds at one load: one concurrency, one offered
// rate, or both uncapped (max throughput). Rounds without a load, and
// rounds whose rate is only what they achieved, are never the same load.
func sameLoad(a, b *Point) bool {
	switch {
	case a.Kind != b.Kind || a.NoLoad || b.NoLoad:
		return false
	case a.Kind == LoadConcurrency:
		return a.Concurrency == b.Concurrency
	case a.MaxThroughput || b.MaxThroughput:
		return a.MaxThroughput && b.MaxThroughput
	}
	return a.RateSet && b.RateSet && a.Rate == b.Rate
}

func judgeOne(p Point, slo goodput.SLO) (Judged, error) {
	if p.Failed {
		j := Judged{Point: p, Exact: p.Requests != nil, Attainment: make([]float64, len(slo.Objectives))}
		return j, nil
	}
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
		return j, err
	}
	if j.Goodput > j.Throughput*(1+1e-9) {
		return j, fmt.Errorf("goodput %g tok/s above the round's throughput %g tok/s; the file is not consistent", j.Goodput, j.Throughput)
	}
	return j, nil
}

// JudgeEach judges each load kind and setting of the sweep apart: rate
// sweeps first.
func JudgeEach(sw *Sweep, slo goodput.SLO) ([]*Result, error) {
	if sw == nil || len(sw.Points) == 0 {
		return nil, errors.New("empty sweep")
	}
	var out []*Result
	for _, sub := range sw.Split() {
		r, err := Judge(sub, slo)
		if err != nil {
			name := string(sub.Points[0].Kind)
			if s := sub.Points[0].Setting; s != "" {
				name += " (" + s + ")"
			}
			return nil, fmt.Errorf("%s sweep: %w", name, err)
		}
		out = append(out, r)
	}
	return out, nil
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
		if !r.Failed {
			j.Listed++
		}
	}
	if p.CountKnown {
		if j.Listed > p.Counted {
			return j, fmt.Errorf("the per-request data lists %d successful requests but the tool counted %d in the round; "+
				"goodput and throughput would not be over the same requests", j.Listed, p.Counted)
		}
		j.Sampled = j.Listed < p.Counted
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
	var tokens, goodTokens float64
	for i, r := range p.Requests {
		if r.Failed {
			continue
		}
		tokens += r.OutputTokens
		if good[i] {
			goodTokens += r.OutputTokens
		}
	}
	if tokens > 0 {
		j.Goodput = p.Throughput * (goodTokens / tokens)
	}
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
	Peak float64 // goodput needed at peak, tok/s; 0 when not asked
	// Replicas for Peak; 0 when no round had goodput to size from.
	Replicas int
	// At indexes the round the cost and energy are of: the knee where it
	// was reached (AtKnee); otherwise the passing round with the most
	// goodput, -1 when no round passed.
	At     int
	AtKnee bool
	// HourlyCost is a replica's price; CostPerMillion the cost of a
	// million good tokens at round At. HasCost is false without a price
	// or without such a round.
	HourlyCost     float64
	CostPerMillion float64
	HasCost        bool
	// JoulesPerToken is GPU energy per good token at round At; 0 when the
	// file has no energy for its window.
	JoulesPerToken float64
	// TaskTokens is the good output tokens one task takes and TaskSuccess
	// the share of tasks that succeed (0: no cost per task).
	TaskTokens, TaskSuccess float64
}

// TaskCost is the cost of one successful task: the cost of a task's good
// tokens, divided by the share of tasks that succeed (a failed task's
// tokens are paid for too).
func (s Sizing) TaskCost() float64 {
	if !s.HasCost || !(s.TaskTokens > 0) || !(s.TaskSuccess > 0) {
		return 0
	}
	return s.CostPerMillion * s.TaskTokens / 1e6 / s.TaskSuccess
}

// BestPassing indexes the round that met the SLO with the most goodput
// (ties to the lower load); -1 when none met it.
func (r *Result) BestPassing() int {
	best := -1
	for i := range r.Points {
		if r.Points[i].Met && (best < 0 || r.Points[i].Goodput > r.Points[best].Goodput) {
			best = i
		}
	}
	return best
}

// Size sizes a fleet from the knee: replicas for peak tok/s of goodput,
// and the cost per million good tokens at hourly per replica (<= 0:
// none). Where the knee was not reached, the cost and energy are those of
// the best passing round, not of a knee.
func (r *Result) Size(peak, hourly float64) (Sizing, error) {
	k := r.KneePoint()
	s := Sizing{Peak: peak, At: r.Knee, AtKnee: r.KneeReached}
	if !r.KneeReached {
		s.At = r.BestPassing()
	}
	if peak > 0 && k.Goodput > 0 {
		n, err := goodput.Replicas(peak, k.Goodput)
		if err != nil {
			return s, fmt.Errorf("replicas: %w", err)
		}
		s.Replicas = n
	}
	if hourly > 0 {
		s.HourlyCost = hourly
	}
	if s.At < 0 {
		return s, nil
	}
	at := &r.Points[s.At]
	if hourly > 0 {
		s.CostPerMillion, s.HasCost = goodput.CostPerMillionGoodTokens(hourly, at.Goodput)
	}
	if good := at.Goodput * at.Duration; at.EnergyJoules > 0 && good > 0 {
		s.JoulesPerToken = at.EnergyJoules / good
	}
	return s, nil
}

// Compare is the regression gate: it lists how cur regressed from base.
// The knee regressed when it moved to a lower load, or when its goodput
// fell by more than maxDrop (0.05 is 5 %). Empty means cur passes. Sweeps
// of different load kinds are not comparable, and say so.
func Compare(base, cur *Result, maxDrop float64) []string {
	if base.Kind != cur.Kind {
		return []string{fmt.Sprintf("the baseline is a %s sweep and this a %s sweep; they cannot be compared", base.Kind, cur.Kind)}
	}
	var out []string
	b, c := base.KneePoint(), cur.KneePoint()
	if c.Load() < b.Load() {
		out = append(out, fmt.Sprintf("the knee moved to a lower load: %s (round %d), was %s (round %d)",
			LoadText(&c.Point), c.Round, LoadText(&b.Point), b.Round))
	}
	if c.Goodput < b.Goodput*(1-maxDrop) {
		out = append(out, fmt.Sprintf("goodput at the knee fell %.1f%%: %s tok/s, was %s tok/s (allowed: %.1f%%)",
			100*(1-c.Goodput/b.Goodput), Thousands(c.Goodput), Thousands(b.Goodput), 100*maxDrop))
	}
	return out
}
