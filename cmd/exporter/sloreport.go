package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// sloReportCmd is the offline twin of the live SLO series: the same maths
// over the window between two captures of one engine.
type sloReportCmd struct {
	ConfigFile string        `name:"config.file" required:"" placeholder:"FILE" help:"Configuration with slos: (and optionally pricing: and targets:)."`
	Target     string        `name:"target" default:"capture" help:"Target name the captures belong to: SLOs limited to targets match on it; its engine:, model: and gpus: in the file apply unless given here."`
	Engine     string        `name:"engine" default:"auto" enum:"auto,vllm,sglang,llamacpp,tgi,triton,trtllm,dynamo" help:"Engine that produced the captures (${enum}); auto: the target's engine: in the file, else detected."`
	Model      string        `name:"model" help:"Model label for engines whose series carry none (llama.cpp, TGI) (default: the target's model: in the file, else unknown)."`
	Window     time.Duration `name:"window" help:"Time between the captures. Required when the second is a file; when it is a URL, the wait before scraping it."`
	GPUs       int           `name:"gpus" help:"GPUs the engine holds, for cost per good token (default: the target's gpus: in the file)."`
	Before     string        `arg:"" name:"before" help:"First capture: a file or an http(s):// URL."`
	After      string        `arg:"" name:"after" optional:"" help:"Second capture (file or URL); omitted: scrape the first URL again after --window."`
}

func isURL(s string) bool { return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") }

func (c *sloReportCmd) Validate() error {
	after := c.After
	if after == "" {
		if !isURL(c.Before) {
			return errors.New("give two captures, or one URL to scrape twice --window apart")
		}
		after = c.Before
	}
	if c.Window <= 0 && (!isURL(after) || c.After == "") {
		return errors.New("--window is required: the time between the two captures")
	}
	return nil
}

func (c *sloReportCmd) Run(e *env) error {
	cfg, err := config.Load(c.ConfigFile)
	if err != nil {
		return err
	}
	if len(cfg.SLOs) == 0 {
		return fmt.Errorf("%s declares no slos", c.ConfigFile)
	}
	// The target's settings in the file, as the daemon would apply them;
	// flags given on the command line win.
	engineName, model, limit := c.Engine, c.Model, config.DefaultModelLimit
	for _, t := range cfg.Targets {
		if t.Name != c.Target {
			continue
		}
		if engineName == "auto" {
			engineName = t.Engine
		}
		if model == "" {
			model = t.Model
		}
		limit = t.ModelLimit
	}
	if model == "" {
		model = "unknown"
	}
	var engine snapshot.Engine
	if engineName != "auto" && engineName != "" {
		engine = snapshot.Engine(engineName)
	}
	cap := &collector.Capturer{Engine: engine, Parse: collector.ParseOptions{DefaultModel: model, ModelLimit: limit}, Target: c.Target, MaxBody: config.DefaultMaxBodySize}
	before, err := cap.Take(e.ctx, c.Before)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Before, err)
	}
	after := c.After
	if after == "" {
		after = c.Before
	}
	if isURL(after) && c.Window > 0 {
		select {
		case <-e.ctx.Done():
			return e.ctx.Err()
		case <-time.After(c.Window):
		}
	}
	cur, err := cap.Take(e.ctx, after)
	if err != nil {
		return fmt.Errorf("%s: %w", after, err)
	}
	if !isURL(after) || !isURL(c.Before) {
		before.Time = cur.Time.Add(-c.Window)
	}
	collector.MarkRestart(before, cur)
	report, err := goodput.BuildReport(before, cur, cfg.GoodputSLOs(), c.cost(cfg))
	if err != nil {
		return err
	}
	for _, fe := range cur.Errors {
		fmt.Fprintf(e.stderr, "warning: %v\n", fe)
	}
	return goodput.WriteReport(e.stdout, report)
}

// cost prices the engine from the file's pricing and the GPU count, or
// returns nil (no cost column) when either is missing.
func (c *sloReportCmd) cost(cfg *config.Config) *goodput.Cost {
	if cfg.Pricing == nil {
		return nil
	}
	gpus := c.GPUs
	if gpus == 0 {
		for _, t := range cfg.Targets {
			if t.Name == c.Target {
				gpus = len(t.GPUs)
			}
		}
	}
	hourly, err := goodput.HourlyCost(cfg.Pricing.Goodput(), gpus)
	if err != nil {
		return nil
	}
	return &goodput.Cost{Hourly: hourly, Currency: cfg.Pricing.Currency}
}
