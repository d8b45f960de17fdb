package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/goodput-exporter/goodput-exporter/accuracy"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/demo"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// simulateCmd serves simulated engines, or sweeps one to show the knee
// and how close the live goodput comes to the truth.
type simulateCmd struct {
	Engines       int           `name:"engines" default:"1" help:"Number of simulated engines."`
	Format        string        `name:"format" default:"vllm" enum:"vllm,sglang,llamacpp,tgi,triton,trtllm,dynamo" help:"Exposition format of the engines (${enum})."`
	Scenario      string        `name:"scenario" placeholder:"LEVER:DUR,...|@FILE" help:"Lever script, e.g. healthy:2m,kv_preemption:3m,healthy (end with ,repeat to loop; abort before a phase cuts off every request in the engine), or @FILE with one phase per line. Levers: healthy, queue_growth, kv_preemption, prefill_interference, kv_monopoly, prefix_cache_collapse, decode_saturation, gpu_throttling, engine_stall."`
	Rate          float64       `name:"rate" help:"Requests per second per engine (default: the built-in chat workload's 10)."`
	Speed         float64       `name:"speed" default:"1" help:"Simulated seconds per wall-clock second."`
	Seed          uint64        `name:"seed" default:"1" help:"Random seed; engine i uses seed+i."`
	ListenAddress string        `name:"web.listen-address" default:"127.0.0.1:8000" help:"Address of the first engine; further engines, then the GPU endpoint (dcgm-exporter format), take the following ports."`
	TruthLog      string        `name:"truth.log" placeholder:"PREFIX" help:"Write each engine's finished requests as JSON lines to PREFIX-<engine>.jsonl."`
	Sweep         bool          `name:"sweep" help:"Instead of serving, sweep the rate and print throughput, true goodput and the live estimate per step."`
	SweepRates    string        `name:"sweep.rates" default:"2:30:2" help:"Rates to sweep: FROM:TO:STEP or a comma-separated list."`
	SweepWarmup   time.Duration `name:"sweep.warmup" default:"180s" help:"Simulated warm-up before each step's window."`
	SweepStep     time.Duration `name:"sweep.step" default:"300s" help:"Simulated length of each step's window."`
	SweepInterval time.Duration `name:"sweep.interval" default:"5s" help:"Scrape cadence inside each window; the intervals are added up as the daemon does."`
	ConfigFile    string        `name:"config.file" placeholder:"FILE" help:"SLOs to judge in the sweep (default: built-in chat SLOs)."`
	MaxSMClock    bool          `name:"gpu.max-sm-clock" help:"The GPU endpoint also exports DCGM_FI_DEV_MAX_SM_CLOCK, as dcgm-exporter does when the field is in its counters file."`
	Engine        []string      `name:"engine" sep:"none" placeholder:"FORMAT[=SCENARIO]" help:"One engine in FORMAT following its own lever script (inline or @FILE; default healthy); repeatable, in port order. Replaces --engines, --format and --scenario."`
}

// engineSpecs reads --engine: each engine's format and scenario.
func (c *simulateCmd) engineSpecs() ([]sim.Format, []sim.Scenario, error) {
	var formats []sim.Format
	var scenarios []sim.Scenario
	for _, e := range c.Engine {
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

func (c *simulateCmd) Validate() error {
	if c.Engines < 1 || c.Engines > 64 {
		return errors.New("--engines must be between 1 and 64")
	}
	if c.Speed <= 0 {
		return errors.New("--speed must be positive")
	}
	if c.Scenario != "" {
		if _, err := sim.LoadScenario(c.Scenario); err != nil {
			return fmt.Errorf("--scenario: %w", err)
		}
	}
	if len(c.Engine) > 64 {
		return errors.New("at most 64 --engine")
	}
	if _, _, err := c.engineSpecs(); err != nil {
		return err
	}
	if c.SweepInterval <= 0 || c.SweepInterval > c.SweepStep {
		return errors.New("--sweep.interval must be positive and at most --sweep.step")
	}
	_, err := parseRates(c.SweepRates)
	return err
}

func (c *simulateCmd) Run(e *env) error {
	if c.Sweep {
		return c.sweep(e)
	}
	format, err := sim.ParseFormat(c.Format)
	if err != nil {
		return err
	}
	spec := demo.FarmSpec{Rate: c.Rate, Speed: c.Speed, Seed: c.Seed, Listen: c.ListenAddress, MaxClock: c.MaxSMClock}
	for range c.Engines {
		spec.Formats = append(spec.Formats, format)
	}
	if c.Scenario != "" {
		sc, _ := sim.LoadScenario(c.Scenario)
		for range c.Engines {
			spec.Scenarios = append(spec.Scenarios, sc)
		}
	}
	if len(c.Engine) > 0 {
		spec.Formats, spec.Scenarios, _ = c.engineSpecs()
	}
	var logs []*os.File
	if c.TruthLog != "" {
		spec.TruthLog = func(i int) io.Writer {
			f, err := os.Create(fmt.Sprintf("%s-%s-%d.jsonl", c.TruthLog, spec.Formats[i], i))
			if err != nil {
				e.logger.Error("truth log", "err", err)
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
	f, err := demo.StartFarm(e.ctx, spec)
	if err != nil {
		return err
	}
	for _, en := range f.Engines {
		fmt.Fprintf(e.stdout, "engine %-12s %s\n", en.Name, en.URL)
	}
	fmt.Fprintf(e.stdout, "gpus   %-12s %s\n", "dcgm", f.GPUURL)
	fmt.Fprintf(e.stdout, "scrape them with: goodput-exporter --gpu.backend=dcgm-exporter --gpu.dcgm-exporter.url=%s", f.GPUURL)
	for _, en := range f.Engines {
		fmt.Fprintf(e.stdout, " --target %s=%s", en.Name, en.URL)
	}
	fmt.Fprintln(e.stdout)
	<-e.ctx.Done()
	return nil
}

func (c *simulateCmd) sweep(e *env) error {
	rates, _ := parseRates(c.SweepRates)
	slos := defaultSweepSLOs()
	if c.ConfigFile != "" {
		cfg, err := config.Load(c.ConfigFile)
		if err != nil {
			return err
		}
		slos = cfg.GoodputSLOs()
	}
	base := sim.DefaultConfig()
	base.Seed = c.Seed
	fmt.Fprintf(e.stdout, "sweep: %d rates, %v warm-up and a %v window each scraped every %v (simulated), seed %d\n\n", len(rates), c.SweepWarmup, c.SweepStep, c.SweepInterval, c.Seed)
	steps, err := accuracy.Run(e.ctx, accuracy.Options{Base: base, Rates: rates, Warmup: c.SweepWarmup, Step: c.SweepStep, Interval: c.SweepInterval, SLOs: slos})
	if err != nil {
		return err
	}
	if err := accuracy.WriteTable(e.stdout, steps); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout)
	for k, s := range slos {
		truth, _ := accuracy.Knee(steps, k, "true")
		lo, _ := accuracy.Knee(steps, k, "lower")
		hi, _ := accuracy.Knee(steps, k, "upper")
		fmt.Fprintf(e.stdout, "knee of %s: %g req/s by the truth (%.0f good tok/s), %g req/s by the live lower bound, %g by the upper\n",
			s.Name, truth.Rate, truth.Goodput, lo.Rate, hi.Rate)
	}
	fmt.Fprintln(e.stdout, "\nexact goodput from the engine's request spans (bound=\"exact\"), beside the truth and the histogram bounds:")
	return accuracy.WriteExactTable(e.stdout, steps)
}

// defaultSweepSLOs: every threshold on a vLLM bucket bound (judged
// exactly, with and without TTFT, whose observation time differs from the
// others'), one between bounds (interpolated), and a per-token one.
func defaultSweepSLOs() []goodput.SLO {
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

// parseRates reads FROM:TO:STEP or a comma-separated list.
func parseRates(s string) ([]float64, error) {
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
