package accuracy

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/collector/gpu"
	"github.com/goodput-exporter/goodput-exporter/diagnosis"
	"github.com/goodput-exporter/goodput-exporter/sim"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// HoldOptions describe a lever held long after a healthy history as long
// as the classifier's baseline: does the verdict stay while the cause
// does, and go once it has ended?
type HoldOptions struct {
	FailModeOptions
	// Healthy is the healthy history before the lever (at least the
	// baseline plus a window, so that the baseline holds healthy traffic
	// only); Hold how long the lever runs; After the healthy spell after.
	Healthy, Hold, After time.Duration
}

// DefaultHoldOptions: the default settings (window 1m, baseline 30m),
// 31 minutes healthy, each lever 15 minutes, 5 minutes healthy after.
func DefaultHoldOptions() HoldOptions {
	o := DefaultFailModeOptions()
	o.Seeds = o.Seeds[:1]
	return HoldOptions{FailModeOptions: o, Healthy: 31 * time.Minute, Hold: 15 * time.Minute, After: 5 * time.Minute}
}

// Change is one raise or clear of a mode, at simulated time At.
type Change struct {
	At     time.Duration
	Mode   diagnosis.Mode
	Raised bool
	// Evidence is the rule's evidence at the judgement that raised or
	// cleared the mode: the values that decided it.
	Evidence string
}

func (c Change) String() string {
	verb := "cleared"
	if c.Raised {
		verb = "raised"
	}
	return fmt.Sprintf("%v %s %s: %s", c.At, c.Mode, verb, c.Evidence)
}

// HoldRun is one lever, seed and format over the whole script.
type HoldRun struct {
	Lever  sim.Lever
	Seed   uint64
	Format sim.Format
	// Onset and End are when the lever switched on and off, read from
	// the simulator's own scenario (sim.Scenario.LeverAt), not from the
	// options.
	Onset, End time.Duration
	// Supported is false when the format cannot judge the lever's mode.
	Supported bool
	Changes   []Change
	// Trace is one line of signals per minute.
	Trace       []string
	traceMinute time.Duration
}

// RunHold plays healthy, then lever l, then healthy again, read in every
// format of o.Formats, and records every raise and clear.
func RunHold(l sim.Lever, seed uint64, o HoldOptions) ([]HoldRun, error) {
	return runScript(sim.DefaultConfig(), l, seed, o)
}

// runScript is RunHold on base.
func runScript(base sim.Config, l sim.Lever, seed uint64, o HoldOptions) ([]HoldRun, error) {
	cfg := base
	cfg.Seed = seed
	cfg.Truth.Horizon = time.Minute
	// A lever that leaves a backlog (a queue, long requests in flight, a
	// stall's waiting clients) ends with its clients cut off, as the
	// demo's tour and the end-to-end suite end it, so that what follows
	// is healthy traffic rather than the backlog's own queue.
	cfg.Scenario = sim.Scenario{Phases: []sim.Phase{
		{Lever: sim.Healthy, Duration: o.Healthy},
		{Lever: l, Duration: o.Hold},
		{Lever: sim.Healthy, Abort: LeavesBacklog(l)},
	}}
	if o.Hold <= 0 {
		cfg.Scenario = sim.Scenario{Phases: []sim.Phase{{Lever: l}}}
	}
	mode, hasMode := diagnosis.ParseMode(string(l))
	runs := make([]HoldRun, len(o.Formats))
	for i, f := range o.Formats {
		runs[i] = HoldRun{Lever: l, Seed: seed, Format: f, Onset: -1, End: -1}
	}
	err := drive(cfg, o.FailModeOptions, o.Healthy+o.Hold+o.After, func(i int, at time.Duration, lever sim.Lever, v *diagnosis.Verdict) {
		r := &runs[i]
		if lever == l && r.Onset < 0 {
			r.Onset = at
		}
		if lever != l && r.Onset >= 0 && r.End < 0 {
			r.End = at
		}
		if hasMode && v.Ready && v.Modes[mode].Supported {
			r.Supported = true
		}
		if v.Ready && (len(r.Trace) == 0 || at/time.Minute != r.traceMinute) {
			r.traceMinute = at / time.Minute
			r.Trace = append(r.Trace, traceLine(at, v))
		}
		raisedBefore := map[diagnosis.Mode]bool{}
		for _, c := range r.Changes {
			raisedBefore[c.Mode] = c.Raised
		}
		for m := range diagnosis.NumModes {
			st := v.Modes[m]
			switch {
			case st.Raised && !raisedBefore[m]:
				r.Changes = append(r.Changes, Change{At: at, Mode: m, Raised: true, Evidence: st.Evidence})
			case !st.Raised && raisedBefore[m]:
				r.Changes = append(r.Changes, Change{At: at, Mode: m, Evidence: st.Evidence})
			}
		}
	})
	return runs, err
}

// LeavesBacklog reports whether lever l leaves requests behind when it
// ends (every lever but prefix_cache_collapse and gpu_throttling, whose
// requests are the usual ones).
func LeavesBacklog(l sim.Lever) bool {
	return l != sim.Healthy && l != sim.PrefixCacheCollapse && l != sim.GPUThrottling
}

// drive runs the simulator with cfg to end on its virtual clock, reads it
// every o.Interval in every format of o.Formats through the daemon's
// adapters, the dcgm-exporter backend (o.GPU) and one Diagnoser per
// format, and calls fn with each format's verdict and the lever the
// simulator held at that moment.
func drive(cfg sim.Config, o FailModeOptions, end time.Duration, fn func(format int, at time.Duration, lever sim.Lever, v *diagnosis.Verdict)) error {
	e, err := sim.New(cfg)
	if err != nil {
		return err
	}
	var backend *gpu.DCGMExporter
	if o.GPU {
		backend, err = gpu.NewDCGMExporter(gpu.DCGMExporterOptions{URL: "http://sim-gpu/metrics", Transport: simGPU{e}})
		if err != nil {
			return err
		}
	}
	type reader struct {
		format sim.Format
		parser *collector.Parser
		diag   *diagnosis.Diagnoser
	}
	var readers []reader
	for _, f := range o.Formats {
		engine := snapshot.Engine(f) // every format is named after its engine
		parser, err := collector.NewParser(engine, collector.ParseOptions{ModelLimit: 100, DefaultModel: "sim"})
		if err != nil {
			return err
		}
		d := diagnosis.New(o.Settings)
		d.SetObjectives(diagnosis.ObjectivesFor("sim", o.SLOs, o.Settings.Thresholds))
		readers = append(readers, reader{f, parser, d})
	}
	start := time.Unix(int64(cfg.StartUnix), 0)
	var buf bytes.Buffer
	noise := newScrapeNoise(o.Noise, cfg.Seed)
	for tick := o.Interval; tick <= end; tick += o.Interval {
		at, missed := noise.next(tick, o.Interval)
		e.AdvanceTo(at)
		lever := e.Lever()
		now := start.Add(at)
		if missed {
			// The scrape failed (a timeout, a dropped connection): the
			// daemon judges the cycle with no snapshot, as it does then.
			for i, r := range readers {
				v := r.diag.Observe(now, nil, nil, backend != nil)
				fn(i, at, lever, &v)
			}
			continue
		}
		var devs []gpu.Device
		if backend != nil {
			if devs, err = backend.Collect(context.Background()); err != nil {
				return err
			}
		}
		for i, r := range readers {
			buf.Reset()
			if err := e.WriteMetrics(&buf, r.format); err != nil {
				return err
			}
			snap, err := r.parser.Parse(buf.Bytes(), "", now)
			if err != nil {
				return fmt.Errorf("the %s adapter rejected the simulator's exposition: %w", r.format, err)
			}
			snap.Target = "sim"
			v := r.diag.Observe(now, snap, devs, backend != nil)
			fn(i, at, lever, &v)
		}
	}
	return nil
}
