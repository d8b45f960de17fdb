package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/goodput-exporter/goodput-exporter/accuracy"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// EngineSpecs reads the simulate command's --engine values,
// FORMAT[=SCENARIO]: each engine's format and lever script.
func EngineSpecs(engines []string) ([]sim.Format, []sim.Scenario, error) {
	var formats []sim.Format
	var scenarios []sim.Scenario
	for _, e := range engines {
		f, script, _ := strings.Cut(e, "=")
		format, err := sim.ParseFormat(f)
		if err != nil {
			return nil, nil, fmt.Errorf("--engine %q: %w", e, err)
		}
		var sc sim.Scenario
		if script != "" {
			if sc, err = sim.LoadScenario(script); err != nil {
				return nil, nil, fmt.Errorf("--engine %q: %w", e, err)
			}
		}
		formats = append(formats, format)
		scenarios = append(scenarios, sc)
	}
	return formats, scenarios, nil
}

// Serve serves the farm spec describes until ctx ends, printing each
// engine's URL, the GPU endpoint's and the daemon command line that
// scrapes them. With truthLog set, engine i's finished requests go as
// JSON lines to truthLog-<format>-<i>.jsonl.
func Serve(ctx context.Context, w io.Writer, spec FarmSpec, truthLog string, logger *slog.Logger) error {
	var logs []*os.File
	if truthLog != "" {
		spec.TruthLog = func(i int) io.Writer {
			f, err := os.Create(fmt.Sprintf("%s-%s-%d.jsonl", truthLog, spec.Formats[i], i))
			if err != nil {
				logger.Error("truth log", "err", err)
				return io.Discard
			}
			logs = append(logs, f)
			return f
		}
	}
	defer func() {
		for _, f := range logs {
			f.Close()
		}
	}()
	f, err := StartFarm(ctx, spec)
	if err != nil {
		return err
	}
	for _, en := range f.Engines {
		fmt.Fprintf(w, "engine %-12s %s\n", en.Name, en.URL)
	}
	fmt.Fprintf(w, "gpus   %-12s %s\n", "dcgm", f.GPUURL)
	fmt.Fprintf(w, "scrape them with: goodput-exporter --gpu.backend=dcgm-exporter --gpu.dcgm-exporter.url=%s", f.GPUURL)
	for _, en := range f.Engines {
		fmt.Fprintf(w, " --target %s=%s", en.Name, en.URL)
	}
	fmt.Fprintln(w)
	<-ctx.Done()
	return nil
}

// SweepOptions say what Sweep runs: the rates, each step's simulated
// warm-up and window, the scrape cadence inside it, and the SLOs judged
// (none: DefaultSweepSLOs).
type SweepOptions struct {
	Seed                   uint64
	Rates                  []float64
	Warmup, Step, Interval time.Duration
	SLOs                   []goodput.SLO
}

// Sweep runs one simulated engine at each rate and writes throughput, true
// goodput and the live bounds per step, the knee by each, and exact
// goodput from the request spans beside them.
func Sweep(ctx context.Context, w io.Writer, c SweepOptions) error {
	rates, slos := c.Rates, c.SLOs
	if len(slos) == 0 {
		slos = DefaultSweepSLOs()
	}
	base := sim.DefaultConfig()
	base.Seed = c.Seed
	fmt.Fprintf(w, "sweep: %d rates, %v warm-up and a %v window each scraped every %v (simulated), seed %d\n\n", len(rates), c.Warmup, c.Step, c.Interval, c.Seed)
	steps, err := accuracy.Run(ctx, accuracy.Options{Base: base, Rates: rates, Warmup: c.Warmup, Step: c.Step, Interval: c.Interval, SLOs: slos})
	if err != nil {
		return err
	}
	if err := accuracy.WriteTable(w, steps); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for k, s := range slos {
		truth, _ := accuracy.Knee(steps, k, "true")
		lo, _ := accuracy.Knee(steps, k, "lower")
		hi, _ := accuracy.Knee(steps, k, "upper")
		fmt.Fprintf(w, "knee of %s: %g req/s by the truth (%.0f good tok/s), %g req/s by the live lower bound, %g by the upper\n",
			s.Name, truth.Rate, truth.Goodput, lo.Rate, hi.Rate)
	}
	fmt.Fprintln(w, "\nexact goodput from the engine's request spans (bound=\"exact\"), beside the truth and the histogram bounds:")
	return accuracy.WriteExactTable(w, steps)
}

// DefaultSweepSLOs: every threshold on a vLLM bucket bound (judged
// exactly, with and without TTFT, whose observation time differs from the
// others'), one between bounds (interpolated), and a per-token one.
func DefaultSweepSLOs() []goodput.SLO {
	obj := func(k goodput.Kind, th, target float64) goodput.Objective {
		return goodput.Objective{Kind: k, Threshold: th, Target: target, IncludeAbort: k == goodput.KindError}
	}
	return []goodput.SLO{
		{Name: "chat", Objectives: []goodput.Objective{obj(goodput.KindTTFT, 0.5, 0.99), obj(goodput.KindTPOT, 0.05, 0.95), obj(goodput.KindError, 0, 0.99)}},
		{Name: "at-finish", Objectives: []goodput.Objective{obj(goodput.KindTPOT, 0.05, 0.95), obj(goodput.KindE2E, 20, 0.9), obj(goodput.KindQueue, 1, 0.95), obj(goodput.KindError, 0, 0.99)}},
		{Name: "interpolated", Objectives: []goodput.Objective{obj(goodput.KindTTFT, 0.3, 0.99), obj(goodput.KindTPOT, 0.04, 0.95), obj(goodput.KindE2E, 12, 0.9)}},
		{Name: "tokens", Objectives: []goodput.Objective{obj(goodput.KindITL, 0.1, 0.99)}},
	}
}

// ParseRates reads FROM:TO:STEP or a comma-separated list.
func ParseRates(s string) ([]float64, error) {
	bad := fmt.Errorf("--sweep.rates %q: want FROM:TO:STEP or a list like 2,4,8", s)
	if parts := strings.Split(s, ":"); len(parts) == 3 {
		var v [3]float64
		for i, p := range parts {
			x, err := strconv.ParseFloat(p, 64)
			if err != nil {
				return nil, bad
			}
			v[i] = x
		}
		if v[0] <= 0 || v[2] <= 0 || v[1] < v[0] || (v[1]-v[0])/v[2] > 1000 {
			return nil, bad
		}
		var out []float64
		for r := v[0]; r <= v[1]+1e-9; r += v[2] {
			out = append(out, r)
		}
		return out, nil
	}
	var out []float64
	for _, p := range strings.Split(s, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || x <= 0 {
			return nil, bad
		}
		out = append(out, x)
	}
	return out, nil
}
