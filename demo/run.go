package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector/gpu"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/diagnosis"
	"github.com/goodput-exporter/goodput-exporter/exporter"
	"github.com/goodput-exporter/goodput-exporter/internal/webserve"
	"github.com/goodput-exporter/goodput-exporter/otlp"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// DefaultTour walks engine 0 through every failure lever, in simulated
// time. Each lever runs long enough for the classifier to name it (two
// windows) and is followed by a healthy spell long enough for the verdict
// to clear; "abort" cuts off the requests a lever left behind (a queue's
// backlog, long outputs, a stall's waiting clients), so that each phase
// shows its own mode and not the one before.
const DefaultTour = "healthy:180s,queue_growth:150s,abort,healthy:150s,kv_preemption:150s,abort,healthy:150s," +
	"prefill_interference:150s,abort,healthy:150s,prefix_cache_collapse:150s,healthy:150s,gpu_throttling:180s,healthy:150s," +
	"engine_stall:120s,abort,healthy:150s,kv_monopoly:180s,abort,healthy:150s,decode_saturation:150s,abort,healthy:150s,repeat"

// Options are the demo's settings (the demo command's flags).
type Options struct {
	ListenAddress string        // where the daemon serves /metrics and its status page
	EnginesListen string        // the first simulated engine; the others and the GPU endpoint take the following ports
	Speed         float64       // simulated seconds per wall-clock second
	Seed          uint64        // random seed of the simulation
	Tour          string        // lever script engine 0 follows, inline or @FILE
	Interval      time.Duration // how often the daemon scrapes the engines
	Refresh       time.Duration // how often the view is redrawn
	Duration      time.Duration // stop after this long (0: until ctx ends)
}

// Validate checks the options before anything starts.
func (d *Options) Validate() error {
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

// Run runs simulated engines, their GPUs and the daemon in one process
// until ctx ends or d.Duration passes, printing every URL it serves to
// stdout and then, every d.Refresh, the daemon's view.
func Run(ctx context.Context, d Options, stdout io.Writer) error {
	l, err := net.Listen("tcp", d.ListenAddress)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", d.ListenAddress, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if d.Duration > 0 {
		ctx, cancel = context.WithTimeout(ctx, d.Duration)
		defer cancel()
	}
	tour, _ := sim.LoadScenario(d.Tour)
	f, err := StartFarm(ctx, FarmSpec{
		Formats:   []sim.Format{sim.FormatVLLM, sim.FormatSGLang},
		Speed:     d.Speed,
		Seed:      d.Seed,
		Scenarios: []sim.Scenario{tour},
		Listen:    d.EnginesListen,
	})
	if err != nil {
		l.Close()
		return err
	}
	// The daemon's log goes to a ring shown under the table, so that it
	// does not scroll the view away.
	logs := newLogRing(4)
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	backend, err := gpu.NewDCGMExporter(gpu.DCGMExporterOptions{URL: f.GPUURL})
	if err != nil {
		l.Close()
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
		l.Close()
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
	// The SGLang engine sends no request spans: the measuring proxy in
	// front of it does, over OTLP/HTTP to the receiver, as in a cluster.
	ol, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		l.Close()
		return err
	}
	otlpSrv := &http.Server{Handler: traces, ReadHeaderTimeout: 5 * time.Second}
	go otlpSrv.Serve(ol)
	defer otlpSrv.Close()
	otlpURL := "http://" + ol.Addr().String() + "/v1/traces"
	var proxies []*proxied
	for _, en := range f.Engines {
		if en.Format != sim.FormatSGLang {
			continue
		}
		pr, err := startProxy(ctx, en, otlpURL, d.Speed, simClock, logger)
		if err != nil {
			l.Close()
			return err
		}
		proxies = append(proxies, pr)
		go pr.play(ctx, d.Speed, d.Interval)
	}
	metricsURL := "http://" + l.Addr().String() + "/metrics"
	srv := &http.Server{Handler: ex.Handler("/metrics", nil), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- webserve.Serve(ctx, srv, []net.Listener{l}, "", logger) }()

	// Every URL the demo serves, one a line, before the first frame.
	fmt.Fprintf(stdout, "daemon: %s\n", metricsURL)
	fmt.Fprintf(stdout, "status: http://%s/ (lever buttons switch the simulated engines)\n", l.Addr())
	fmt.Fprintf(stdout, "health: http://%s/-/healthy\n", l.Addr())
	for _, en := range f.Engines {
		fmt.Fprintf(stdout, "engine: %-10s %s\n", en.Name, en.URL)
	}
	fmt.Fprintf(stdout, "gpus:   %-10s %s\n", "dcgm", f.GPUURL)
	fmt.Fprintf(stdout, "otlp:   %s (the vLLM engine's request spans go to the receiver in-process)\n", otlpURL)
	for _, pr := range proxies {
		fmt.Fprintf(stdout, "proxy:  %-10s %s (measuring proxy → the engine's requests played back)\n", pr.engine.Name, pr)
	}
	slos := map[string]string{f.Engines[0].Name: "chat", f.Engines[1].Name: "chat-latency"}
	view := &demoView{metricsURL: metricsURL, farm: f, slo: slos, logs: logs, out: stdout, tty: isTerminal(stdout), speed: d.Speed,
		minSpan: 2 * d.Interval,
		verdict: func(target string) []string { return evidence(ex, target) }}
	go view.run(ctx, d.Refresh)
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	err = <-errc
	fmt.Fprintln(stdout, "demo stopped")
	return err
}

// loader is the daemon's configuration: one target per simulated engine,
// each holding its own GPU, the demo SLOs and a GPU price.
func (d *Options) loader(f *Farm) exporter.Loader {
	return func() (*config.Config, error) {
		cfg, err := config.Parse(nil)
		if err != nil {
			return nil, err
		}
		var targets []config.Target
		for i, en := range f.Engines {
			tc := config.Target{Name: en.Name, URL: en.URL, GPUs: []string{fmt.Sprint(i)}}
			// vLLM's request spans, or the measuring proxy's in front of
			// SGLang: exact goodput for both.
			tc.Traces = &config.Traces{ServiceName: en.Name}
			targets = append(targets, tc)
		}
		cfg.SLOs = demoSLOs(f.Engines[0].Name, f.Engines[1].Name)
		cfg.Diagnosis = demoDiagnosis(d.Speed)
		cfg.Pricing = &config.Pricing{Currency: "USD", GPUHour: 2.5}
		if err := cfg.AddTargets(targets); err != nil {
			return nil, err
		}
		return cfg, nil
	}
}

// demoDiagnosis scales the classifier to the demo's clock: the daemon
// judges wall time, the engines run speed times faster, so the window,
// the baseline and queue_growth's sustain shrink by speed and the
// thresholds that are rates per second grow by it. The rest are ratios
// and engine-measured latencies.
func demoDiagnosis(speed float64) *config.Diagnosis {
	th := diagnosis.DefaultThresholds()
	slope, preempt := th.QueueSlope*speed, th.PreemptionRate*speed
	sustain := config.Duration(float64(th.Sustain()) / speed)
	return &config.Diagnosis{
		Window:     config.Duration(float64(time.Minute) / speed),
		Baseline:   config.Duration(float64(30*time.Minute) / speed),
		Thresholds: config.DiagnosisThresholds{QueueSlope: &slope, PreemptionRate: &preempt, QueueSustain: &sustain},
	}
}

// farmLevers lets the status page switch the simulated engines' levers;
// a switch ends the engine's tour.
type farmLevers struct{ f *Farm }

func (l farmLevers) engine(target string) *Engine {
	for _, en := range l.f.Engines {
		if en.Name == target {
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
