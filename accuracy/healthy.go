package accuracy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/snapshot"

	"github.com/goodput-exporter/goodput-exporter/diagnosis"
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
		Thresholds: sim.Thresholds{Queue: KneeQueue, Error: true}})
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

// KneeQueue is the queue time the knees are found with (ShapeKnee): a
// request that waits longer counts against the knee's goodput.
const KneeQueue = time.Second

// KneeSeeds are the tuning seeds a shape's knee is taken over: all of
// them. Over seeds 1 to 5 alone the slower model's knee was 10.25 req/s,
// past the load where its queue grows on seed 20 (queue_growth raised at
// its knee there, at 3m47s).
var KneeSeeds = Seeds(TuningSeedFirst, TuningSeedLast-TuningSeedFirst+1)

// ShapeKneeOver is the knee of a shape over several seeds: the smallest
// of ShapeKnee on each. Where the goodput peaks moves with the seed (the
// bursty arrivals and the slower model peak anywhere between 12.8 and
// 15.2 and between 10.25 and 10.75 requests per second on seeds 1 to 5),
// the peak of one seed lies past the load where the queue already grows
// on others; the smallest is the largest load at which the queue does not
// grow on any of the seeds.
func ShapeKneeOver(ctx context.Context, s sim.Shape, seeds []uint64, lo, hi, step float64) (float64, error) {
	knee := 0.0
	for i, seed := range seeds {
		k, err := ShapeKnee(ctx, s, seed, lo, hi, step)
		if err != nil {
			return 0, err
		}
		if i == 0 || k < knee {
			knee = k
		}
	}
	return knee, nil
}

// ShapeKnees are the knees of sim.Shapes in requests per second, as
// ShapeKneeOver finds them on KneeSeeds, tuning seeds, in 40 steps over a
// range around each (TestShapeKnees checks them with -failmode.knees;
// about 15 minutes of two cores). Before they were taken over several
// seeds they were seed 1's alone, which for the bursty shape and the
// slower model lay past the knee of most other seeds.
var ShapeKnees = map[string]float64{
	"chat":       16.2,
	"rag":        2.4,
	"short-chat": 105.6,
	"bursty":     12.8,
	"slow-model": 10.0,
}

// ShapeOverloads are, per shape, the smallest of HealthyLoads past the
// knee at which the simulator's own queue outgrows the engine on tuning
// seeds (TestShapeOverloads checks them with -failmode.knees): the
// chat, the short chat and the slower model at 1.25 times their knees
// (a queue of hundreds to thousands within 8 minutes), the bursty shape
// and RAG only at twice theirs. At 1.25 times their knees those two are
// served at the rate offered: the bursty shape's queue surges and
// drains (under 100 waiting at 20 minutes on every tuning seed
// checked), RAG's holds a few requests while chunked prefills of long
// prompts keep its TTFT over the objective; their knees are where
// requests start waiting, not where the engine runs out of capacity.
var ShapeOverloads = map[string]float64{
	"chat":       1.25,
	"rag":        2,
	"short-chat": 1.25,
	"bursty":     2,
	"slow-model": 1.25,
}

// ShapeQueue plays healthy traffic of shape s at load times its knee on
// seed and returns the requests waiting, as the engine's own gauge shows
// them, at each of at (ascending, from the start).
func ShapeQueue(s sim.Shape, load float64, seed uint64, at []time.Duration) ([]float64, error) {
	e, err := healthyEngine(s, load, seed, 0)
	if err != nil {
		return nil, err
	}
	scrape, err := vllmScraper(e)
	if err != nil {
		return nil, err
	}
	var out []float64
	for _, t := range at {
		e.AdvanceTo(t)
		snap, err := scrape()
		if err != nil {
			return nil, err
		}
		w := 0.0
		for _, m := range snap.Models {
			w += m.Gauges[snapshot.Waiting].V
		}
		out = append(out, w)
	}
	return out, nil
}

// healthyEngine is the simulator playing healthy traffic of shape s at
// load times its knee on seed, keeping the records of the requests that
// finished within horizon of its time (0: all of them).
func healthyEngine(s sim.Shape, load float64, seed uint64, horizon time.Duration) (*sim.Engine, error) {
	cfg, err := shapeAt(s, load)
	if err != nil {
		return nil, err
	}
	cfg.Seed = seed
	cfg.Truth.Horizon = horizon
	cfg.Scenario = sim.Scenario{Phases: []sim.Phase{{Lever: sim.Healthy}}}
	return sim.New(cfg)
}

// HealthyCase is one healthy shape at one load and scrape cadence.
type HealthyCase struct {
	Shape sim.Shape
	// Load is the offered load as a multiple of the shape's knee.
	Load     float64
	Interval time.Duration
	Noise    ScrapeNoise
}

// shapeAt is shape s's configuration with its classes' rates scaled to
// load times its knee (ShapeKnees).
func shapeAt(s sim.Shape, load float64) (sim.Config, error) {
	knee, ok := ShapeKnees[s.Name]
	if !ok {
		return sim.Config{}, errors.New("accuracy: no knee for shape " + s.Name)
	}
	cfg := s.Apply(sim.DefaultConfig())
	total := 0.0
	for _, cl := range cfg.Workload.Classes {
		total += cl.Rate
	}
	for i := range cfg.Workload.Classes {
		cfg.Workload.Classes[i].Rate *= load * knee / total
	}
	return cfg, nil
}

// RunHealthy runs healthy traffic of one shape for d and returns, per
// format, what the classifier raised and when (from the start).
func RunHealthy(c HealthyCase, seed uint64, d time.Duration, o FailModeOptions) ([]HoldRun, error) {
	cfg, err := shapeAt(c.Shape, c.Load)
	if err != nil {
		return nil, err
	}
	o.Interval, o.Noise = c.Interval, c.Noise
	return runScript(cfg, sim.Healthy, seed, HoldOptions{FailModeOptions: o, Healthy: d})
}

// HealthyLoads are the loads, as multiples of the knee, healthy traffic
// is judged at: half the knee and the knee (nothing may be raised), 1.25
// times it and twice it (queue_growth and nothing else where the load
// outgrows the engine, ShapeOverloads; nothing but queue_growth where
// it does not).
var HealthyLoads = []float64{0.5, 1, 1.25, 2}

// Overload reports whether the case's load outgrows its shape's engine
// (ShapeOverloads).
func (c HealthyCase) Overload() bool {
	o, ok := ShapeOverloads[c.Shape.Name]
	return ok && c.Load >= o
}

// NameWithin is how soon after its onset (the engine's queue,
// HealthyOutcome.Queued) an overload's queue_growth must be raised:
// DetectWithin windows of the default settings, as every lever's mode
// must be named within them of the lever's onset.
func NameWithin() time.Duration {
	return DetectWithin * DefaultEvalOptions().Settings.Window
}

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
	// Queued is when the simulator's own queue last stood empty before
	// the run's end (QueueOnset), from the start: the onset of the
	// overload; -1 where the queue was empty at the end. Measured for
	// the loads past the knee only (-1 for the others).
	Queued time.Duration
	// PastKnee is whether every mode raised was first raised while the
	// engine was past its knee on the objective the mode names, by the
	// simulator's per-request truth (PastKnee). Measured at and under
	// the knee only, where a mode was raised (false for the others).
	PastKnee bool
	// Trace is one line of signals per minute (not in the record).
	Trace []string
}

// Pass: nothing raised under the knee and at it; at a load that
// outgrows the engine queue_growth within NameWithin of the overload's
// onset (Queued), and nothing else; past the knee but within the
// engine's capacity nothing but queue_growth.
//
// An overload's onset is when the engine's own queue began to stand,
// as a lever's is when it switched on: the engine starts empty, and
// until its batch has filled it serves every request offered, however
// many more arrive than it can finish (the slower model at 1.25 times
// its knee: no request waits for the first 25 to 60 seconds while its
// batch grows to its ceiling). A queue that has stood a minute is what
// a surge at the knee looks like too (the bursty shape's grow for
// about a minute, then drain), so no rule can name the overload sooner
// without naming surges.
//
// At the knee the offered load wanders, and on a seed whose arrivals
// bunch more than the tuning seeds' did, the engine can be past its knee
// for a minute or more: the bursty shape's knee on seed 6047, 145
// requests waiting with 8 % of TTFT met (queue_growth raised); the
// slower model's on seed 7048, its batch grown from 58 to 110 in its
// second minute with 92 % of requests within the TPOT objective
// (decode_saturation raised). A mode raised then names what is under
// way: it passes where the simulator's per-request truth says the engine
// was past its knee on that mode's objective (PastKnee), by the bar the
// knee is found with and the SLO's own target, not by the classifier's.
func (h HealthyOutcome) Pass() bool {
	if h.Case.Load <= 1 {
		return len(h.Raised) == 0 || h.PastKnee
	}
	at, q := h.Raised[diagnosis.QueueGrowth]
	if !h.Case.Overload() || h.Queued < 0 {
		return len(h.Raised) == 0 || q && len(h.Raised) == 1
	}
	return q && len(h.Raised) == 1 && at-h.Queued <= NameWithin()
}

// QueueOnset plays the case's traffic on seed for d, reading the
// simulator's own queue every second, and returns when it last stood
// empty (the second after), or -1 if it is empty at the end. The
// simulator is deterministic in its seed, so this is the queue the
// run's formats read.
func QueueOnset(c HealthyCase, seed uint64, d time.Duration) (time.Duration, error) {
	e, err := healthyEngine(c.Shape, c.Load, seed, 0)
	if err != nil {
		return 0, err
	}
	onset := time.Duration(0)
	for t := time.Second; t <= d; t += time.Second {
		e.AdvanceTo(t)
		if e.State().Waiting == 0 {
			onset = t + time.Second
		}
	}
	if onset > d {
		return -1, nil
	}
	return onset, nil
}

// HealthyRunLength is how long each healthy run lasts.
const HealthyRunLength = 6 * time.Minute

// HealthyFormats are the formats healthy traffic at and under the knee
// is judged in on every evaluation seed (the engines most deployments
// run); the others, and the load past the knee, on the first
// HealthyEveryFormatSeeds seeds only, which keeps `make accuracy` within
// about a quarter of an hour on two cores.
var HealthyFormats = []sim.Format{sim.FormatVLLM, sim.FormatSGLang, sim.FormatLlamaCPP}

// HealthyEveryFormatSeeds is how many of the first seeds run every case
// in every format of the options.
const HealthyEveryFormatSeeds = 5

// RunHealthyCases runs every case for every seed, in every format of o.
func RunHealthyCases(cases []HealthyCase, seeds []uint64, o FailModeOptions) ([]HealthyOutcome, error) {
	return RunHealthyEvaluation(cases, seeds, len(seeds), o)
}

// RunHealthyEvaluation runs every case on the first every seeds in every
// format of o, and on the seeds after those the cases at or under the
// knee in the formats of o that are HealthyFormats. The outcomes are in
// the order of cases, then seeds, then formats.
func RunHealthyEvaluation(cases []HealthyCase, seeds []uint64, every int, o FailModeOptions) ([]HealthyOutcome, error) {
	type job struct {
		c    HealthyCase
		seed uint64
		o    FailModeOptions
	}
	var few []sim.Format
	for _, f := range o.Formats {
		if slices.Contains(HealthyFormats, f) {
			few = append(few, f)
		}
	}
	var jobs []job
	for _, c := range cases {
		for i, seed := range seeds {
			jo := o
			if i >= every {
				if c.Load > 1 || len(few) == 0 {
					continue
				}
				jo.Formats = few
			}
			jobs = append(jobs, job{c, seed, jo})
		}
	}
	out := make([][]HealthyOutcome, len(jobs))
	err := parallel(len(jobs), func(i int) error {
		j := jobs[i]
		runs, err := RunHealthy(j.c, j.seed, HealthyRunLength, j.o)
		if err != nil {
			return fmt.Errorf("%s at %gx knee every %s, seed %d: %w", j.c.Shape.Name, j.c.Load, j.c.Interval, j.seed, err)
		}
		queued := time.Duration(-1)
		if j.c.Load > 1 {
			if queued, err = QueueOnset(j.c, j.seed, HealthyRunLength); err != nil {
				return err
			}
		}
		for _, r := range runs {
			h := HealthyOutcome{Case: j.c, Seed: j.seed, Format: r.Format, Raised: map[diagnosis.Mode]time.Duration{}, Trace: r.Trace, Queued: queued}
			for _, ch := range r.Changes {
				if _, seen := h.Raised[ch.Mode]; ch.Raised && !seen {
					h.Raised[ch.Mode] = ch.At
				}
			}
			if j.c.Load <= 1 && len(h.Raised) > 0 {
				h.PastKnee = true
				for m, at := range h.Raised {
					past, err := PastKnee(j.c, j.seed, m, at, j.o.Settings.Window, j.o.SLOs[0])
					if err != nil {
						return err
					}
					h.PastKnee = h.PastKnee && past
				}
			}
			out[i] = append(out[i], h)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return slices.Concat(out...), nil
}

// pastKneeDrain bounds how long PastKnee lets the engine drain.
const pastKneeDrain = 10 * time.Minute

// PastKnee plays the case's traffic on seed to at, then lets the
// requests in the engine finish with none arriving, and reports whether,
// by the simulator's per-request truth over the window before at, the
// engine was past its knee on the objective mode names:
//
//   - queue_growth: more than half of the requests that arrived in the
//     window waited longer than KneeQueue before they first ran (or,
//     never run, before they left), the bar the knee is found with;
//   - decode_saturation: the requests that finished in the window met
//     the TPOT objective of slo less often than its target.
//
// For any other mode it reports false. The simulator is deterministic
// in its seed, so these are the requests the run's formats saw.
func PastKnee(c HealthyCase, seed uint64, m diagnosis.Mode, at, window time.Duration, slo goodput.SLO) (bool, error) {
	if m != diagnosis.QueueGrowth && m != diagnosis.DecodeSaturation {
		return false, nil
	}
	// The records of the requests that finished after the window began
	// are kept, to the end of the drain.
	e, err := healthyEngine(c.Shape, c.Load, seed, window+pastKneeDrain)
	if err != nil {
		return false, err
	}
	e.AdvanceTo(at)
	if m == diagnosis.DecodeSaturation {
		for k, o := range slo.Objectives {
			if o.Kind == goodput.KindTPOT {
				c := judge(slo, e.Truth().Records(at-window, at), at-window, at).objectives[k]
				return c.judged > 0 && c.good < o.Target*c.judged, nil
			}
		}
		return false, nil
	}
	if err := e.Drain(pastKneeDrain); err != nil {
		return false, err
	}
	n, late := 0, 0
	for _, r := range e.Truth().Records(0, e.Now()+time.Second) {
		if r.Arrival < at-window || r.Arrival >= at {
			continue
		}
		n++
		if r.Queue() > KneeQueue {
			late++
		}
	}
	return 2*late > n, nil
}
