package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/goodput-exporter/goodput-exporter/capacity"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// capacityCmd judges a load generator's sweep against an SLO and sizes a
// fleet from its knee; with --baseline it is the regression gate.
type capacityCmd struct {
	ConfigFile    string   `name:"config.file" required:"" placeholder:"FILE" help:"Configuration with slos: (and optionally pricing:)."`
	SLO           string   `name:"slo" help:"Name of the SLO to judge the sweep against (default: the first in the file)."`
	TaskTokens    float64  `name:"task-tokens" placeholder:"TOKENS" help:"Good output tokens one task takes (a conversation, an agent run), for the cost per successful task."`
	TaskSuccess   float64  `name:"task-success" default:"1" placeholder:"RATIO" help:"Share of tasks that succeed, in (0,1], for the cost per successful task."`
	PromURL       string   `name:"prometheus.url" placeholder:"URL" help:"Prometheus to read each round's GPU energy from, over the round's window (GuideLLM reports record absolute windows)."`
	PromSelector  string   `name:"prometheus.selector" default:"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" placeholder:"SELECTOR" help:"Series selector of the GPUs' energy counters in millijoules (add labels to pick the node's GPUs)."`
	AllSLOs       bool     `name:"all-slos" help:"Judge the sweep against every SLO in the file, one knee per SLO, with a table of them at the end."`
	Peak          float64  `name:"peak" placeholder:"TOK/S" help:"Goodput needed at peak, in output tokens per second, for the replica count."`
	ReplicaGPUs   int      `name:"replica-gpus" default:"1" help:"GPUs one replica holds, for its price from pricing:."`
	Baseline      []string `name:"baseline" sep:"none" placeholder:"FILE" help:"Sweep to compare against (repeat for several files); exit non-zero when the knee regressed."`
	HTML          string   `name:"html" placeholder:"FILE" help:"Also write a self-contained HTML page (charts of goodput, throughput and each objective's percentile against load, the knee and safe capacity marked, and the table) to FILE."`
	CompareAnyway bool     `name:"compare-anyway" help:"Compare with --baseline even when it measured something else (another tool, model, token distribution or arrival process), saying what differs; without it such a baseline is refused with exit status 3."`
	MaxDrop       float64  `name:"max-drop" default:"0.05" help:"Largest allowed fall of the knee's goodput against --baseline, as a ratio (0.05 is 5%)."`
	Files         []string `arg:"" name:"file" help:"Sweep results: a GuideLLM benchmarks report (.json/.yaml), AIPerf run directories or profile_export_aiperf.json files, GenAI-Perf profile_export_genai_perf.json files, vllm bench serve results or vllm bench sweep summary.json files, or SGLang bench_serving output (JSON lines). Rate and concurrency runs, and runs of different settings or data sets, are judged as separate sweeps; runs at one load are one round."`
}

func (c *capacityCmd) Validate() error {
	if c.Peak < 0 {
		return errors.New("--peak must not be negative")
	}
	if c.ReplicaGPUs < 1 {
		return errors.New("--replica-gpus must be at least 1")
	}
	if c.TaskTokens < 0 || !(c.TaskSuccess > 0 && c.TaskSuccess <= 1) {
		return errors.New("--task-tokens must not be negative and --task-success is a ratio in (0,1]")
	}
	if !(c.MaxDrop >= 0 && c.MaxDrop < 1) {
		return errors.New("--max-drop is a ratio in [0,1)")
	}
	return nil
}

func (c *capacityCmd) Run(e *env) error {
	cfg, err := config.Load(c.ConfigFile)
	if err != nil {
		return err
	}
	if c.AllSLOs && c.SLO != "" {
		return errors.New("--all-slos and --slo exclude each other")
	}
	slo, err := capacity.PickSLO(cfg.GoodputSLOs(), c.SLO, c.ConfigFile)
	if err != nil {
		return err
	}
	opts := capacity.ReportOptions{Files: c.Files, Baseline: c.Baseline, SLO: slo, Peak: c.Peak, MaxDrop: c.MaxDrop, CompareAnyway: c.CompareAnyway,
		TaskTokens: c.TaskTokens, TaskSuccess: c.TaskSuccess, Ctx: e.ctx}
	if c.PromURL != "" {
		opts.Energy = &capacity.EnergyQuery{URL: c.PromURL, Selector: c.PromSelector}
	}
	if cfg.Pricing != nil {
		if opts.Hourly, err = goodput.HourlyCost(cfg.Pricing.Goodput(), c.ReplicaGPUs); err != nil {
			return fmt.Errorf("pricing: %w", err)
		}
		opts.Currency = cfg.Pricing.Currency
	}
	report := func() error {
		if c.AllSLOs {
			return capacity.ReportEach(e.stdout, opts, cfg.GoodputSLOs())
		}
		return capacity.Report(e.stdout, opts)
	}
	if c.HTML == "" {
		return report()
	}
	var page bytes.Buffer
	opts.HTML = &page
	err = report()
	if page.Len() > 0 {
		// written even when the gate tripped: the page shows why
		if werr := os.WriteFile(c.HTML, page.Bytes(), 0o644); werr != nil {
			return errors.Join(err, fmt.Errorf("--html: %w", werr))
		}
	}
	return err
}

// exitStatus is the process's exit status for a command's error: 3 for a
// baseline that measured something else (not a regression), 1 otherwise.
func exitStatus(err error) int {
	if errors.Is(err, capacity.ErrNotComparable) {
		return 3
	}
	return 1
}
