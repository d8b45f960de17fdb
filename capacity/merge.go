package capacity

import (
	"math"
	"slices"
	"strings"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// merge combines judged rounds at one load into one round. Where every
// one carries per-request data, the requests are pooled and judged as one
// round: throughput is the rounds' output tokens over their summed
// measurement time (their mean where a duration is missing), and the
// latency percentiles are the pooled requests'. Otherwise the round is
// their mean throughput and goodput, met only when every one met the SLO,
// with each objective's worst attainment and each percentile's worst
// value; Repeats keeps them, side by side, for the spread.
func merge(js []Judged, slo goodput.SLO) (Judged, error) {
	base := js[0].Point
	var sources []string
	for _, j := range js {
		if !slices.Contains(sources, j.Source) {
			sources = append(sources, j.Source)
		}
	}
	base.Source = strings.Join(sources, ", ")
	weights, total := make([]float64, len(js)), 0.0
	for i, j := range js {
		weights[i] = j.Duration
		total += j.Duration
	}
	if slices.ContainsFunc(js, func(j Judged) bool { return !(j.Duration > 0) }) {
		for i := range weights {
			weights[i] = 1
		}
		total = float64(len(js))
	}
	mean := func(f func(j *Judged) float64) float64 {
		var s float64
		for i := range js {
			s += weights[i] * f(&js[i])
		}
		return s / total
	}
	base.Throughput = mean(func(j *Judged) float64 { return j.Throughput })
	base.Rate = mean(func(j *Judged) float64 { return j.Rate })
	base.Duration, base.EnergyJoules, base.Counted, base.CountKnown = 0, 0, 0, true
	base.Failed, base.Requests, base.Percentiles = true, nil, nil
	for _, j := range js {
		if j.EnergyNote != "" {
			base.EnergyNote = j.EnergyNote // one run without energy: the round has none
		}
	}
	for _, j := range js {
		base.Duration += j.Duration
		base.EnergyJoules += j.EnergyJoules
		base.Counted += j.Counted
		base.CountKnown = base.CountKnown && j.CountKnown
		base.Failed = base.Failed && j.Failed
	}
	if !base.CountKnown {
		base.Counted = 0
	}
	if base.EnergyNote != "" {
		base.EnergyJoules = 0
	}
	if !slices.ContainsFunc(js, func(j Judged) bool { return j.Requests == nil }) {
		for _, j := range js {
			base.Requests = append(base.Requests, j.Requests...)
		}
		base.Percentiles = requestPercentiles(base.Requests)
		out, err := judgeOne(base, slo)
		if err != nil {
			return out, err
		}
		out.Repeats, out.Pooled = js, true
		return out, nil
	}
	out := Judged{Point: base, Met: true, Exact: true, Repeats: js}
	out.Goodput = mean(func(j *Judged) float64 { return j.Goodput })
	out.Attainment = make([]float64, len(slo.Objectives))
	for i := range out.Attainment {
		out.Attainment[i] = 1
	}
	for _, j := range js {
		out.Met = out.Met && j.Met
		out.Exact = out.Exact && j.Exact
		out.Sampled = out.Sampled || j.Sampled
		out.Listed += j.Listed
		for i, a := range j.Attainment {
			out.Attainment[i] = min(out.Attainment[i], a)
		}
		for kind, m := range j.Percentiles {
			for pct, v := range m {
				if w, ok := out.Percentile(kind, pct); !ok || v > w {
					out.setPct(kind, pct, v)
				}
			}
		}
	}
	out.Goodput = min(out.Goodput, out.Throughput)
	return out, nil
}

// pooledPcts are the percentiles computed from pooled requests.
var pooledPcts = []float64{50, 90, 95, 99, 99.9}

// requestPercentiles computes each latency's percentiles over the
// successful requests that have it (linear interpolation between closest
// ranks, as numpy's default).
func requestPercentiles(reqs []Request) map[goodput.Kind]map[float64]float64 {
	var p Point
	for _, k := range []goodput.Kind{goodput.KindTTFT, goodput.KindTPOT, goodput.KindITL, goodput.KindE2E} {
		var v []float64
		for _, r := range reqs {
			if x := latencyOf(r, k); !r.Failed && !math.IsNaN(x) {
				v = append(v, x)
			}
		}
		if len(v) == 0 {
			continue
		}
		slices.Sort(v)
		for _, pct := range pooledPcts {
			p.setPct(k, pct, quantile(v, pct/100))
		}
	}
	return p.Percentiles
}

// quantile of sorted v at q in [0,1], linear between closest ranks.
func quantile(v []float64, q float64) float64 {
	pos := q * float64(len(v)-1)
	lo := int(math.Floor(pos))
	if lo+1 >= len(v) {
		return v[len(v)-1]
	}
	return v[lo] + (pos-float64(lo))*(v[lo+1]-v[lo])
}

// Spread is the lowest and highest goodput of a round's repeats; ok is
// false for a load run once.
func (j *Judged) Spread() (lo, hi float64, ok bool) {
	if len(j.Repeats) < 2 {
		return 0, 0, false
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, r := range j.Repeats {
		lo, hi = min(lo, r.Goodput), max(hi, r.Goodput)
	}
	return lo, hi, true
}

func sortFloats(v []float64) { slices.Sort(v) }
