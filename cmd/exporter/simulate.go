package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/demo"
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
	if _, _, err := demo.EngineSpecs(c.Engine); err != nil {
		return err
	}
	if c.SweepInterval <= 0 || c.SweepInterval > c.SweepStep {
		return errors.New("--sweep.interval must be positive and at most --sweep.step")
	}
	_, err := demo.ParseRates(c.SweepRates)
	return err
}

func (c *simulateCmd) Run(e *env) error {
	if c.Sweep {
		opts := demo.SweepOptions{Seed: c.Seed, Warmup: c.SweepWarmup, Step: c.SweepStep, Interval: c.SweepInterval}
		opts.Rates, _ = demo.ParseRates(c.SweepRates)
		if c.ConfigFile != "" {
			cfg, err := config.Load(c.ConfigFile)
			if err != nil {
				return err
			}
			opts.SLOs = cfg.GoodputSLOs()
		}
		return demo.Sweep(e.ctx, e.stdout, opts)
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
		spec.Formats, spec.Scenarios, _ = demo.EngineSpecs(c.Engine)
	}
	return demo.Serve(e.ctx, e.stdout, spec, c.TruthLog, e.logger)
}
