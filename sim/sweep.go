package sim

import (
	"context"
	"errors"
	"time"
)

// SweepEdge marks the start or the end of a sweep step's measured window.
type SweepEdge int

// Sweep edges.
const (
	StepStart SweepEdge = iota
	StepEnd
)

// SweepConfig runs Base at each rate for Warmup then Step of virtual time.
type SweepConfig struct {
	Base Config
	// Rates are total open-loop request rates, split over the open-loop
	// classes in their baseline proportions.
	Rates []float64
	// Warmup is run before measuring; 0 means 10s.
	Warmup time.Duration
	// Step is the measured window per rate.
	Step       time.Duration
	Thresholds Thresholds
	// OnEdge, when set, is called at the start and the end of each
	// measured window, for example to scrape the exposition there.
	OnEdge func(step int, rate float64, edge SweepEdge, e *Engine) error
}

// SweepPoint is one rate's outcome over its measured window.
type SweepPoint struct {
	Rate float64
	// TTFTP99 is over requests that finished in the window with a token.
	TTFTP99 time.Duration
	// Throughput and Goodput are generated tokens per second: all of
	// them, and those of requests that met every objective.
	Throughput, Goodput float64
	Report              Report
}

// Sweep runs a fresh engine per rate, each with the same seed, and
// reports each rate's true throughput and goodput.
func Sweep(ctx context.Context, sc SweepConfig) ([]SweepPoint, error) {
	if sc.Step <= 0 || len(sc.Rates) == 0 {
		return nil, errors.New("sim sweep: need rates and a positive step")
	}
	warm := sc.Warmup
	if warm <= 0 {
		warm = 10 * time.Second
	}
	var total float64
	for _, c := range sc.Base.Workload.Classes {
		if c.Sessions == 0 {
			total += c.Rate
		}
	}
	if total <= 0 {
		return nil, errors.New("sim sweep: the base workload has no open-loop class")
	}
	out := make([]SweepPoint, 0, len(sc.Rates))
	for i, rate := range sc.Rates {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		cfg := sc.Base
		cfg.Workload = cloneWorkload(cfg.Workload)
		for k := range cfg.Workload.Classes {
			cfg.Workload.Classes[k].Rate *= rate / total
		}
		e, err := New(cfg)
		if err != nil {
			return out, err
		}
		edge := func(which SweepEdge) error {
			if sc.OnEdge == nil {
				return nil
			}
			return sc.OnEdge(i, rate, which, e)
		}
		e.AdvanceTo(warm)
		if err := edge(StepStart); err != nil {
			return out, err
		}
		before := e.c.GenerationTokens
		e.AdvanceTo(warm + sc.Step)
		if err := edge(StepEnd); err != nil {
			return out, err
		}
		rep := e.truth.Evaluate(warm, warm+sc.Step, sc.Thresholds)
		var ttfts []float64
		i0, i1 := e.truth.window(warm, warm+sc.Step)
		for _, r := range e.truth.recs[i0:i1] {
			if d, ok := r.TTFT(); ok {
				ttfts = append(ttfts, d.Seconds())
			}
		}
		p99 := quantile(ttfts, 0.99)
		pt := SweepPoint{
			Rate:       rate,
			Throughput: float64(e.c.GenerationTokens-before) / sc.Step.Seconds(),
			Goodput:    float64(rep.GoodTokens) / sc.Step.Seconds(),
			Report:     rep,
		}
		if p99 == p99 { // not NaN
			pt.TTFTP99 = seconds(p99)
		}
		out = append(out, pt)
	}
	return out, nil
}
