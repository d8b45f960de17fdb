package accuracy

import (
	"fmt"

	"context"
	"errors"
	"github.com/goodput-exporter/goodput-exporter/diagnosis"
	"time"

	"github.com/goodput-exporter/goodput-exporter/sim"
)

// ShapeKnee finds the knee of a healthy shape: the offered load past which
// the queue grows, where the batch reaches its cap (the knee of the sweep
// above, for the chat). It is the load with the most goodput by the
// simulator's per-request truth when the objective is a queue time under
// 1 s and no error: under the knee goodput follows the load, past it the
// queue, and so the queue time, grows without bound. Rates from lo to hi
// in steps of step requests per second, each run 4 minutes after 2 of
// warm-up (shorter steps miss a queue that grows slowly).
func ShapeKnee(ctx context.Context, s sim.Shape, seed uint64, lo, hi, step float64) (float64, error) {
	if lo <= 0 || hi < lo || step <= 0 {
		return 0, errors.New("accuracy: a knee search needs 0 < lo <= hi and a positive step")
	}
	cfg := s.Apply(sim.DefaultConfig())
	cfg.Seed = seed
	cfg.Truth.Horizon = 0
	var rates []float64
	for r := lo; r <= hi+1e-9; r += step {
		rates = append(rates, r)
	}
	pts, err := sim.Sweep(ctx, sim.SweepConfig{Base: cfg, Rates: rates, Warmup: 2 * time.Minute, Step: 4 * time.Minute,
		Thresholds: sim.Thresholds{Queue: time.Second, Error: true}})
	if err != nil {
		return 0, err
	}
	best := pts[0]
	for _, p := range pts[1:] {
		if p.Goodput > best.Goodput {
			best = p
		}
	}
	return best.Rate, nil
}

// ShapeKnees are the knees of sim.Shapes in requests per second, as
// ShapeKnee finds them on seed 1, a tuning seed, in 40 steps over a range
// around each (TestShapeKnees checks them with -failmode.knees; about 5
// minutes).
var ShapeKnees = map[string]float64{
	"chat":       16.2,
	"rag":        2.75,
	"short-chat": 105.6,
	"bursty":     15.2,
	"slow-model": 10.75,
}

// HealthyCase is one healthy shape at one load and scrape cadence.
type HealthyCase struct {
	Shape sim.Shape
	// Load is the offered load as a multiple of the shape's knee.
	Load     float64
	Interval time.Duration
	Noise    ScrapeNoise
}

// RunHealthy runs healthy traffic of one shape for d and returns, per
// format, what the classifier raised and when (from the start).
func RunHealthy(c HealthyCase, seed uint64, d time.Duration, o FailModeOptions) ([]HoldRun, error) {
	knee, ok := ShapeKnees[c.Shape.Name]
	if !ok {
		return nil, errors.New("accuracy: no knee for shape " + c.Shape.Name)
	}
	cfg := c.Shape.Apply(sim.DefaultConfig())
	total := 0.0
	for _, cl := range cfg.Workload.Classes {
		total += cl.Rate
	}
	for i := range cfg.Workload.Classes {
		cfg.Workload.Classes[i].Rate *= c.Load * knee / total
	}
	o.Interval, o.Noise = c.Interval, c.Noise
	return runScript(cfg, sim.Healthy, seed, HoldOptions{FailModeOptions: o, Healthy: d})
}

// HealthyLoads are the loads, as multiples of the knee, healthy traffic
// is judged at: half the knee and the knee (nothing may be raised), and
// 1.25 times it (queue_growth and nothing else).
var HealthyLoads = []float64{0.5, 1, 1.25}

// HealthyNoise is the scrape noise of the healthy runs: one scrape in 10
// missed, intervals jittered by up to ±20 %.
var HealthyNoise = ScrapeNoise{MissOneIn: 10, Jitter: 0.2}

// HealthyCases are every shape at every load, scraped every 1 s and 5 s
// with HealthyNoise.
func HealthyCases() []HealthyCase {
	var out []HealthyCase
	for _, s := range sim.Shapes {
		for _, l := range HealthyLoads {
			for _, iv := range []time.Duration{time.Second, 5 * time.Second} {
				out = append(out, HealthyCase{Shape: s, Load: l, Interval: iv, Noise: HealthyNoise})
			}
		}
	}
	return out
}

// HealthyOutcome is one healthy case, seed and format: the modes raised
// and when each was first raised, from the start.
type HealthyOutcome struct {
	Case   HealthyCase
	Seed   uint64
	Format sim.Format
	Raised map[diagnosis.Mode]time.Duration
	// Trace is one line of signals per minute (not in the record).
	Trace []string
}

// Pass: nothing raised under the knee and at it; past it queue_growth,
// and nothing else.
func (h HealthyOutcome) Pass() bool {
	if h.Case.Load <= 1 {
		return len(h.Raised) == 0
	}
	_, q := h.Raised[diagnosis.QueueGrowth]
	return q && len(h.Raised) == 1
}

// HealthyRunLength is how long each healthy run lasts.
const HealthyRunLength = 6 * time.Minute

// RunHealthyCases runs every case for every seed.
func RunHealthyCases(cases []HealthyCase, seeds []uint64, o FailModeOptions) ([]HealthyOutcome, error) {
	var out []HealthyOutcome
	for _, c := range cases {
		for _, seed := range seeds {
			runs, err := RunHealthy(c, seed, HealthyRunLength, o)
			if err != nil {
				return nil, fmt.Errorf("%s at %gx knee every %s, seed %d: %w", c.Shape.Name, c.Load, c.Interval, seed, err)
			}
			for _, r := range runs {
				h := HealthyOutcome{Case: c, Seed: seed, Format: r.Format, Raised: map[diagnosis.Mode]time.Duration{}, Trace: r.Trace}
				for _, ch := range r.Changes {
					if _, seen := h.Raised[ch.Mode]; ch.Raised && !seen {
						h.Raised[ch.Mode] = ch.At
					}
				}
				out = append(out, h)
			}
		}
	}
	return out, nil
}
