package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/alecthomas/kong"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/version"

	"github.com/goodput-exporter/goodput-exporter/demo"
)

// errReported means the command already printed what went wrong; main
// only sets the exit status.
var errReported = errors.New("reported")

// cli is the whole command line. Each command is a struct with a Run
// method; kong picks one and binds env.
type cli struct {
	LogLevel  string `name:"log.level" default:"info" enum:"debug,info,warn,error" help:"Only log messages at or above this level (${enum})."`
	LogFormat string `name:"log.format" default:"logfmt" enum:"logfmt,json" help:"Log line format (${enum})."`

	Serve       serveCmd       `cmd:"" default:"withargs" help:"Scrape the configured engines and serve /metrics (the default command)."`
	Demo        demoCmd        `cmd:"" help:"Simulated engines and GPUs, the daemon and a live view, in one process: no GPU or engine needed."`
	CheckConfig checkConfigCmd `cmd:"" name:"check-config" help:"Validate a configuration file and print every error with its line."`
	SLOReport   sloReportCmd   `cmd:"" name:"slo-report" help:"SLO attainment, goodput bounds and cost per good token over the window between two captures of an engine's /metrics."`
	Capacity    capacityCmd    `cmd:"" help:"Judge a load generator's sweep (GuideLLM, AIPerf, GenAI-Perf, vllm bench serve or sweep, SGLang bench_serving) against an SLO: the knee, replicas and cost per good token at it, an HTML page, and a regression gate against a baseline sweep."`
	Simulate    simulateCmd    `cmd:"" help:"Serve simulated engines (and their GPUs) on loopback, or sweep one to show the knee."`
	Proxy       proxyCmd       `cmd:"" help:"Forward to one OpenAI-compatible engine and measure each completion request as its client saw it, sent to the daemon as a span: exact goodput for any engine."`
	Version     versionCmd     `cmd:"" help:"Print the version and build information."`
}

// env is what every command receives.
type env struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	logger *slog.Logger
}

type exitCode int

// run parses args and runs the chosen command. Tests call it directly.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	var c cli
	parser, err := kong.New(&c,
		kong.Name("goodput-exporter"),
		kong.Description("Goodput against SLOs, KV-cache pressure and failure modes of LLM inference engines, for Prometheus."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitCode(code)) }),
		kong.UsageOnError(),
		kong.Vars{"tour": demo.DefaultTour},
	)
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			code, ok := r.(exitCode)
			if !ok {
				panic(r)
			}
			if code != 0 {
				err = errReported
			}
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		parser.Errorf("%s", err)
		return errReported
	}
	lvl := promslog.NewLevel()
	if err := lvl.Set(c.LogLevel); err != nil {
		return err
	}
	format := promslog.NewFormat()
	if err := format.Set(c.LogFormat); err != nil {
		return err
	}
	logger := promslog.New(&promslog.Config{Level: lvl, Format: format, Writer: stderr})
	return kctx.Run(&env{ctx: ctx, stdout: stdout, stderr: stderr, logger: logger})
}

type versionCmd struct{}

func (versionCmd) Run(e *env) error {
	fmt.Fprintln(e.stdout, version.Print("goodput-exporter"))
	return nil
}
