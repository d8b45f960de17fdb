package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/goodput-exporter/goodput-exporter/capacity"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// capacityCmd judges a load generator's sweep against an SLO and sizes a
// fleet from its knee; with --baseline it is the regression gate.
type capacityCmd struct {
	ConfigFile  string   `name:"config.file" required:"" placeholder:"FILE" help:"Configuration with slos: (and optionally pricing:)."`
	SLO         string   `name:"slo" help:"Name of the SLO to judge the sweep against (default: the first in the file)."`
	Peak        float64  `name:"peak" placeholder:"TOK/S" help:"Goodput needed at peak, in output tokens per second, for the replica count."`
	ReplicaGPUs int      `name:"replica-gpus" default:"1" help:"GPUs one replica holds, for its price from pricing:."`
	Baseline    []string `name:"baseline" sep:"none" placeholder:"FILE" help:"Sweep to compare against (repeat for several files); exit non-zero when the knee regressed."`
	MaxDrop     float64  `name:"max-drop" default:"0.05" help:"Largest allowed fall of the knee's goodput against --baseline, as a ratio (0.05 is 5%)."`
	Files       []string `arg:"" name:"file" help:"Sweep results: a GuideLLM benchmarks report (.json/.yaml), AIPerf run directories or profile_export_aiperf.json files, or vllm bench serve result files. Rate and concurrency runs are judged as two sweeps."`
}

// errRegressed fails the command when the gate trips; its reasons were
// printed already.
var errRegressed = errors.New("capacity regressed against the baseline")

func (c *capacityCmd) Validate() error {
	if c.Peak < 0 {
		return errors.New("--peak must not be negative")
	}
	if c.ReplicaGPUs < 1 {
		return errors.New("--replica-gpus must be at least 1")
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
	slo, err := c.pick(cfg.GoodputSLOs())
	if err != nil {
		return err
	}
	results, err := judgeFiles(c.Files, slo)
	if err != nil {
		return err
	}
	hourly, currency := 0.0, ""
	if cfg.Pricing != nil {
		if hourly, err = goodput.HourlyCost(cfg.Pricing.Goodput(), c.ReplicaGPUs); err != nil {
			return fmt.Errorf("pricing: %w", err)
		}
		currency = cfg.Pricing.Currency
	}
	if len(results) > 1 {
		fmt.Fprintf(e.stdout, "The files hold %d sweeps of different load kinds; each is judged on its own.\n\n", len(results))
	}
	for i, res := range results {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		sizing, err := res.Size(c.Peak, hourly)
		if err != nil {
			return err
		}
		if err := res.Write(e.stdout, sizing, currency); err != nil {
			return err
		}
	}
	if len(c.Baseline) == 0 {
		return nil
	}
	bases, err := judgeFiles(c.Baseline, slo)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	if len(bases) != len(results) || slices.ContainsFunc(bases, func(b *capacity.Result) bool {
		return !slices.ContainsFunc(results, func(r *capacity.Result) bool { return r.Kind == b.Kind })
	}) {
		return fmt.Errorf("baseline: its sweeps (%s) are not of the load kinds of the files judged (%s)", kinds(bases), kinds(results))
	}
	var problems []string
	for _, base := range bases {
		i := slices.IndexFunc(results, func(r *capacity.Result) bool { return r.Kind == base.Kind })
		bk := base.KneePoint()
		fmt.Fprintf(e.stdout, "\nbaseline %s knee: round %d at %s, %s tok/s of goodput\n", base.Kind, bk.Round,
			capacity.LoadText(&bk.Point), capacity.Thousands(bk.Goodput))
		for _, p := range capacity.Compare(base, results[i], c.MaxDrop) {
			problems = append(problems, fmt.Sprintf("%s sweep: %s", base.Kind, p))
		}
	}
	if len(problems) == 0 {
		fmt.Fprintln(e.stdout, "regression gate: pass")
		return nil
	}
	fmt.Fprintf(e.stdout, "regression gate: FAIL\n  %s\n", strings.Join(problems, "\n  "))
	return errRegressed
}

func kinds(rs []*capacity.Result) string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.Kind))
	}
	return strings.Join(out, ", ")
}

func (c *capacityCmd) pick(slos []goodput.SLO) (goodput.SLO, error) {
	if len(slos) == 0 {
		return goodput.SLO{}, fmt.Errorf("%s declares no slos", c.ConfigFile)
	}
	if c.SLO == "" {
		return slos[0], nil
	}
	var names []string
	for _, s := range slos {
		if s.Name == c.SLO {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return goodput.SLO{}, fmt.Errorf("no SLO named %q in %s (it has %s)", c.SLO, c.ConfigFile, strings.Join(names, ", "))
}

// judgeFiles judges the files' sweeps: one, or a rate sweep and a
// concurrency sweep judged apart where the files hold both.
func judgeFiles(files []string, slo goodput.SLO) ([]*capacity.Result, error) {
	sw, err := capacity.Read(files...)
	if err != nil {
		return nil, err
	}
	return capacity.JudgeEach(sw, slo)
}
