package capacity

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Dist is a token-count distribution as the file gives it: a mean and
// whatever percentiles it records. Known is false when the file has none.
type Dist struct {
	Known bool
	Mean  float64
	Pcts  map[float64]float64
}

func (d Dist) String() string {
	if !d.Known {
		return "not recorded"
	}
	s := "mean " + Sig3(d.Mean)
	var ps []float64
	for p := range d.Pcts {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	for _, p := range ps {
		s += fmt.Sprintf(", P%g %s", p, Sig3(d.Pcts[p]))
	}
	return s
}

// Facts are the conditions a round's numbers hold under, as its file
// records them: what was sent, to what, how, and over which window. An
// empty string or an unknown Dist is a fact the file does not record.
type Facts struct {
	Model                     string
	Stack                     string // engine, hardware, quantization, as the file says
	Endpoint                  string // the URL the tool sent to, where the file records it
	InputTokens, OutputTokens Dist
	// Arrival is how requests arrived: "poisson", "constant", "gamma
	// (burstiness B)", "all at once" for an open loop; "closed loop" for
	// a fixed number of clients.
	Arrival string
	// Warmup says what of the run was left out of its window, "" when
	// the file does not say.
	Warmup string
	// MeanE2E is the mean request latency in seconds (0: not recorded),
	// for the achieved rate of a closed loop by Little's law.
	MeanE2E float64
}

// ClosedLoop reports a round whose load was a fixed number of clients,
// each sending its next request when the last one finished.
func (p *Point) ClosedLoop() bool { return p.Facts.Arrival == ArrivalClosed }

// Arrival processes.
const (
	ArrivalClosed    = "closed loop"
	ArrivalPoisson   = "poisson"
	ArrivalConstant  = "constant"
	ArrivalAllAtOnce = "all at once"
)

// AchievedRate is the request rate a round achieved, req/s, and how it is
// known: the tool's own figure ("measured"), or, for a closed loop whose
// file lacks it, clients ÷ mean latency by Little's law (no think time:
// none of the tools adds one).
func (p *Point) AchievedRate() (float64, string) {
	if p.Kind == LoadRate && !p.RateSet && p.Rate > 0 {
		return p.Rate, "measured"
	}
	if p.Kind == LoadConcurrency && p.Rate > 0 {
		return p.Rate, "measured"
	}
	if p.Kind == LoadConcurrency && p.Facts.MeanE2E > 0 {
		return p.Concurrency / p.Facts.MeanE2E, "by Little's law: clients ÷ mean latency"
	}
	return math.NaN(), ""
}

// firstString is the first non-empty string at any of the paths.
func firstString(top map[string]json.RawMessage, paths ...[]string) string {
	for _, keys := range paths {
		raw, err := path(top, keys...)
		if err != nil || raw == nil {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
		var list []string
		if json.Unmarshal(raw, &list) == nil && len(list) > 0 {
			return strings.Join(list, ", ")
		}
	}
	return ""
}

// meanDist is a distribution known only by its mean: total ÷ count.
func meanDist(total, n float64, ok bool) Dist {
	if !ok || !(n > 0) || !finite(total) {
		return Dist{}
	}
	return Dist{Known: true, Mean: total / n}
}

// listDist is the distribution of per-request counts: mean and
// P50/P90/P99.
func listDist(v []float64) Dist {
	if len(v) == 0 {
		return Dist{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	return Dist{Known: true, Mean: sum / float64(len(s)),
		Pcts: map[float64]float64{50: quantile(s, 0.5), 90: quantile(s, 0.9), 99: quantile(s, 0.99)}}
}

// distinct lists the different non-empty values of f over the rounds.
func (r *Result) distinct(f func(p *Judged) string) []string {
	var out []string
	for i := range r.Points {
		if v := f(&r.Points[i]); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// ClosedLoop reports a sweep whose rounds were all closed loops.
func (r *Result) ClosedLoop() bool {
	return !slices.ContainsFunc(r.Points, func(j Judged) bool { return !j.ClosedLoop() })
}

// FactLines are the five facts beside the sweep's numbers, and the facts
// the files do not record.
func (r *Result) FactLines() (lines, missing []string) {
	add := func(name string, vals []string) {
		if len(vals) == 0 {
			missing = append(missing, name)
			return
		}
		lines = append(lines, fmt.Sprintf("%s: %s", name, strings.Join(vals, "; ")))
	}
	arrival := r.distinct(func(p *Judged) string {
		if p.ClosedLoop() {
			return fmt.Sprintf("closed loop (%s clients, no think time)", Sig3(p.Concurrency))
		}
		if p.Facts.Arrival == "" {
			return ""
		}
		return "open loop, " + p.Facts.Arrival
	})
	if r.ClosedLoop() {
		arrival = []string{"closed loop: a fixed number of clients per round, each sending its next request when the last one ends (no think time)"}
	}
	add("arrival", arrival)
	in := r.distinct(func(p *Judged) string {
		if !p.Facts.InputTokens.Known {
			return ""
		}
		return p.Facts.InputTokens.String()
	})
	out := r.distinct(func(p *Judged) string {
		if !p.Facts.OutputTokens.Known {
			return ""
		}
		return p.Facts.OutputTokens.String()
	})
	if len(in) > 3 {
		in = append(in[:3], "…")
	}
	if len(out) > 3 {
		out = append(out[:3], "…")
	}
	add("input tokens per request", in)
	add("output tokens per request", out)
	add("model", r.distinct(func(p *Judged) string { return p.Facts.Model }))
	stack := r.distinct(func(p *Judged) string {
		s := p.Version
		if p.Facts.Stack != "" {
			s += ", " + p.Facts.Stack
		}
		return s
	})
	add("tool and stack", stack)
	add("window", r.distinct(func(p *Judged) string {
		if p.Facts.Warmup == "" {
			return ""
		}
		return p.Facts.Warmup
	}))
	return lines, missing
}
