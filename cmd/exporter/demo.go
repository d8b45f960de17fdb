package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector/gpu"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/diagnosis"
	"github.com/goodput-exporter/goodput-exporter/exporter"
	"github.com/goodput-exporter/goodput-exporter/otlp"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// defaultTour walks engine 0 through every failure lever, in simulated
// time. Each lever runs long enough for the classifier to name it (two
// windows) and is followed by a healthy spell long enough for the verdict
// to clear; "abort" cuts off the requests a lever left behind (a queue's
// backlog, long outputs, a stall's waiting clients), so that each phase
// shows its own mode and not the one before.
const defaultTour = "healthy:180s,queue_growth:150s,abort,healthy:150s,kv_preemption:150s,abort,healthy:150s," +
	"prefill_interference:150s,abort,healthy:150s,prefix_cache_collapse:150s,healthy:150s,gpu_throttling:180s,healthy:150s," +
	"engine_stall:120s,abort,healthy:150s,kv_monopoly:180s,abort,healthy:150s,decode_saturation:150s,abort,healthy:150s,repeat"

// demoCmd runs simulated engines, their GPUs and the daemon in one
// process, and shows the daemon's view in the terminal.
type demoCmd struct {
	ListenAddress string        `name:"web.listen-address" default:"127.0.0.1:9835" help:"Where the daemon serves /metrics."`
	EnginesListen string        `name:"engines.listen-address" default:"127.0.0.1:0" help:"Address of the first simulated engine; the others and the GPU endpoint take the following ports (port 0: any free ports)."`
	Speed         float64       `name:"speed" default:"10" help:"Simulated seconds per wall-clock second."`
	Seed          uint64        `name:"seed" default:"1" help:"Random seed of the simulation."`
	Tour          string        `name:"tour" default:"${tour}" help:"Lever script engine 0 follows (simulated time), inline or @FILE; engine 1 stays healthy."`
	Interval      time.Duration `name:"collect.interval" default:"1s" help:"How often the daemon scrapes the engines."`
	Refresh       time.Duration `name:"refresh" default:"1s" help:"How often the view is redrawn."`
	Duration      time.Duration `name:"duration" help:"Stop after this long (default: until Ctrl-C)."`
}

func (d *demoCmd) Validate() error {
	if d.Speed <= 0 || d.Interval <= 0 || d.Refresh <= 0 {
		return fmt.Errorf("--speed, --collect.interval and --refresh must be positive")
	}
	if _, err := sim.LoadScenario(d.Tour); err != nil {
		return fmt.Errorf("--tour: %w", err)
	}
	return nil
}

// demoSLOs: the same latency objectives for both engines (on vLLM bucket
// bounds, so exact there); SGLang reports no finish reasons, so its SLO
// has no error objective, which would leave its goodput unsupported.
func demoSLOs(vllm, sglang string) []config.SLO {
	latency := func() config.Objectives {
		return config.Objectives{
			TTFT: &config.Objective{Threshold: config.Duration(500 * time.Millisecond), Target: 0.99},
			TPOT: &config.Objective{Threshold: config.Duration(50 * time.Millisecond), Target: 0.95},
		}
	}
	chat := latency()
	chat.Error = &config.Objective{Target: 0.99, IncludeAbort: true}
	return []config.SLO{
		{Name: "chat", Match: config.SLOMatch{Targets: []string{vllm}}, Objectives: chat},
		{Name: "chat-latency", Match: config.SLOMatch{Targets: []string{sglang}}, Objectives: latency()},
	}
}

func (d *demoCmd) Run(e *env) error {
	listeners, err := listenAll([]string{d.ListenAddress})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	if d.Duration > 0 {
		ctx, cancel = context.WithTimeout(ctx, d.Duration)
		defer cancel()
	}
	tour, _ := sim.LoadScenario(d.Tour)
	f, err := startFarm(ctx, farmSpec{
		formats:   []sim.Format{sim.FormatVLLM, sim.FormatSGLang},
		speed:     d.Speed,
		seed:      d.Seed,
		scenarios: []sim.Scenario{tour},
		listen:    d.EnginesListen,
	})
	if err != nil {
		closeAll(listeners)
		return err
	}
	// The daemon's log goes to a ring shown under the table, so that it
	// does not scroll the view away.
	logs := newLogRing(4)
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	backend, err := gpu.NewDCGMExporter(gpu.DCGMExporterOptions{URL: f.gpuURL})
	if err != nil {
		closeAll(listeners)
		return err
	}
	// The simulated GPUs draw --speed simulated seconds of energy per
	// wall-clock second: their readings are timed on the simulation's
	// clock, or every step would exceed what the power limit allows.
	wallStart := time.Now()
	simClock := func() time.Time {
		return wallStart.Add(time.Duration(float64(time.Since(wallStart)) * d.Speed))
	}
	gm := gpu.NewManager(gpu.ManagerOptions{Backend: backend, Logger: logger, Clock: simClock})
	defer gm.Close()
	ex := exporter.New(exporter.Options{Interval: d.Interval, Timeout: d.Interval, Logger: logger, GPU: gm, Levers: farmLevers{f}})
	if err := ex.Start(ctx, d.loader(f)); err != nil {
		closeAll(listeners)
		return err
	}
	stop := func() {
		cancel()
		ex.Wait()
	}
	defer stop()
	traces := otlp.New(otlp.Options{Sink: ex})
	ex.Registry().MustRegister(traces)
	go feedSpans(ctx, f, traces, d.Interval)
	metricsURL := "http://" + listeners[0].Addr().String() + "/metrics"
	srv := &http.Server{Handler: ex.Handler("/metrics", nil), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- serveHTTP(ctx, srv, listeners, "", &env{ctx: ctx, logger: logger}) }()

	// Every URL the demo serves, one a line, before the first frame.
	fmt.Fprintf(e.stdout, "daemon: %s\n", metricsURL)
	fmt.Fprintf(e.stdout, "status: http://%s/ (lever buttons switch the simulated engines)\n", listeners[0].Addr())
	fmt.Fprintf(e.stdout, "health: http://%s/-/healthy\n", listeners[0].Addr())
	for _, en := range f.engines {
		fmt.Fprintf(e.stdout, "engine: %-10s %s\n", en.name, en.url)
	}
	fmt.Fprintf(e.stdout, "gpus:   %-10s %s\n", "dcgm", f.gpuURL)
	fmt.Fprintln(e.stdout, "otlp:   not served; the vLLM engine's request spans go to the receiver in-process")
	slos := map[string]string{f.engines[0].name: "chat", f.engines[1].name: "chat-latency"}
	view := &demoView{metricsURL: metricsURL, farm: f, slo: slos, logs: logs, out: e.stdout, tty: isTerminal(e.stdout), speed: d.Speed,
		minSpan: 2 * d.Interval,
		verdict: func(target string) []string { return evidence(ex, target) }}
	go view.run(ctx, d.Refresh)
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	err = <-errc
	fmt.Fprintln(e.stdout, "demo stopped")
	return err
}

// loader is the daemon's configuration: one target per simulated engine,
// each holding its own GPU, the demo SLOs and a GPU price.
func (d *demoCmd) loader(f *farm) exporter.Loader {
	return func() (*config.Config, error) {
		cfg, err := config.Parse(nil)
		if err != nil {
			return nil, err
		}
		var targets []config.Target
		for i, en := range f.engines {
			tc := config.Target{Name: en.name, URL: en.url, GPUs: []string{fmt.Sprint(i)}}
			if en.format == sim.FormatVLLM {
				tc.Traces = &config.Traces{ServiceName: en.name} // its request spans: exact goodput
			}
			targets = append(targets, tc)
		}
		cfg.SLOs = demoSLOs(f.engines[0].name, f.engines[1].name)
		cfg.Diagnosis = demoDiagnosis(d.Speed)
		cfg.Pricing = &config.Pricing{Currency: "USD", GPUHour: 2.5}
		if err := cfg.AddTargets(targets); err != nil {
			return nil, err
		}
		return cfg, nil
	}
}

// demoDiagnosis scales the classifier to the demo's clock: the daemon
// judges wall time, the engines run speed times faster, so the window and
// baseline shrink by speed and the thresholds that are rates per second
// grow by it. The rest are ratios and engine-measured latencies.
func demoDiagnosis(speed float64) *config.Diagnosis {
	th := diagnosis.DefaultThresholds()
	slope, preempt := th.QueueSlope*speed, th.PreemptionRate*speed
	return &config.Diagnosis{
		Window:     config.Duration(float64(time.Minute) / speed),
		Baseline:   config.Duration(float64(30*time.Minute) / speed),
		Thresholds: config.DiagnosisThresholds{QueueSlope: &slope, PreemptionRate: &preempt},
	}
}

// farmLevers lets the status page switch the simulated engines' levers;
// a switch ends the engine's tour.
type farmLevers struct{ f *farm }

func (l farmLevers) engine(target string) *farmEngine {
	for _, en := range l.f.engines {
		if en.name == target {
			return en
		}
	}
	return nil
}

func (l farmLevers) Levers(target string) (string, []string, bool) {
	en := l.engine(target)
	if en == nil {
		return "", nil, false
	}
	all := make([]string, len(sim.Levers))
	for i, lv := range sim.Levers {
		all[i] = string(lv)
	}
	return string(en.srv.Lever()), all, true
}

func (l farmLevers) SetLever(target, lever string) error {
	en := l.engine(target)
	if en == nil {
		return fmt.Errorf("no simulated engine %q", target)
	}
	lv, err := sim.ParseLever(lever)
	if err != nil {
		return err
	}
	en.srv.SetLever(lv)
	return nil
}

// evidence is the view's line per raised mode of a target: the rule in
// words with its values.
func evidence(ex *exporter.Exporter, target string) []string {
	v, ok := ex.Verdict(target)
	if !ok {
		return nil
	}
	var out []string
	for _, m := range v.Raised() {
		out = append(out, m.String()+": "+v.Modes[m].Evidence)
	}
	return out
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
