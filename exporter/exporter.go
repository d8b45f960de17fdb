// Package exporter is the daemon: one collection goroutine per engine
// target, a renderer that gathers and encodes the exposition when
// /metrics asks for it after something changed (at most once per change,
// shared by the requests that arrive together; it and the series cache
// live in exporter/exposition), and the HTTP handlers that serve it. A Prometheus scrape of /metrics never waits on an engine.
package exporter

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"

	"github.com/goodput-exporter/goodput-exporter/collector/gpu"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/exporter/exposition"
	"github.com/goodput-exporter/goodput-exporter/internal/fetch"
)

// Options are the daemon's command-line settings.
type Options struct {
	// Interval between two scrapes of one target.
	Interval time.Duration
	// Timeout of one scrape when the config file sets none.
	Timeout time.Duration
	// NoJitter starts every target at once (tests); by default each target
	// starts at a random offset within the first interval.
	NoJitter bool
	Logger   *slog.Logger
	// EnableLifecycle serves POST/PUT /-/reload; without it the endpoint
	// answers 403, as Prometheus does without --web.enable-lifecycle.
	// SIGHUP reloads either way.
	EnableLifecycle bool
	// GPU reads the node's GPUs and attributes them to targets; nil
	// exports no GPU series.
	GPU *gpu.Manager
	// MaxRequestRate and MaxTokenRate are the ceilings of the bound on
	// every engine counter's increase (goodput.Limits), per second: 0 uses
	// goodput.DefaultLimits, a negative value turns that bound off.
	MaxRequestRate, MaxTokenRate float64
	// MaxTargets caps the targets one daemon runs (0: no cap). A file
	// naming more is refused (the running configuration stays); past it,
	// discovered targets are left out, counted and logged.
	MaxTargets int
	// MaxModels caps the models read over all targets (modelPool): each
	// target may always read MaxModels/MaxTargets of them, more only
	// while the pool has room. 0: no cap but each target's model_limit.
	MaxModels int
	// Levers, when set, puts buttons on the status page that switch a
	// simulated engine's failure lever, served by POST /-/lever. Only the
	// demo sets it; a daemon serving real engines has no such endpoint.
	Levers LeverSwitch
	// BodyBudget bounds the bytes of engine bodies held at once over every
	// target (fetch.Budget); 0 is fetch.DefaultBudget.
	BodyBudget int64
	// Hosts are the names, besides IP addresses, localhost and the
	// machine's host name, that a Host header of POST /-/reload or
	// /-/lever may carry (the hosts of the listen addresses and
	// --web.allowed-host): other names are refused as DNS rebinding.
	Hosts []string
	// EnablePprof serves Go's net/http/pprof under /debug/pprof/.
	EnablePprof bool
}

// Exporter owns the targets and the rendered exposition.
type Exporter struct {
	opts      Options
	logger    *slog.Logger
	transport *http.Transport
	budget    *fetch.Budget // the engines' bodies in flight
	models    *modelPool    // the models read over all targets

	reloadMu sync.Mutex // one ApplyConfig at a time
	mu       sync.Mutex // guards cfg, targets, ctx and warned; never held across a scan or a wait
	cfg      *config.Config
	targets  map[string]*target
	ctx      context.Context
	warned   map[string]bool
	loops    sync.WaitGroup // GPU cycle

	// fileCfg is the file's configuration alone, as last applied (cfg
	// adds the discovered targets); guarded by mu. discovered are the
	// targets service discovery found (SetDiscovered); guarded by reloadMu.
	fileCfg    *config.Config
	discovered []config.Target

	reg      *prometheus.Registry
	series   *exposition.SeriesCache
	gatherer prometheus.Gatherers
	self     *selfMetrics
	render   *exposition.Renderer
	extras   extras
	hosts    []string // names a state-changing request's Host may carry
}

// New builds an exporter; Run starts it.
func New(opts Options) *Exporter {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.BodyBudget <= 0 {
		opts.BodyBudget = fetch.DefaultBudget
	}
	e := &Exporter{
		opts:      opts,
		logger:    opts.Logger,
		transport: fetch.NewTransport(nil), // the engines and dcgm-exporter share one policy
		budget:    fetch.NewBudget(opts.BodyBudget),
		models:    newModelPool(opts.MaxModels, opts.MaxTargets),
		targets:   map[string]*target{},
		reg:       prometheus.NewRegistry(),
		hosts:     opts.Hosts,
	}
	if name, err := os.Hostname(); err == nil {
		e.hosts = append(slices.Clip(e.hosts), name)
	}
	e.self = newSelfMetrics(e.reg)
	e.reg.MustRegister(versioncollector.NewCollector("goodput_exporter"))
	if opts.GPU != nil {
		e.reg.MustRegister(gpuCollector{opts.GPU})
	}
	// Go and process metrics live on their own registry, as in node_exporter.
	runtime := prometheus.NewRegistry()
	runtime.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	e.gatherer = prometheus.Gatherers{e.reg, &slowGatherer{g: runtime, period: opts.Interval}}
	// Engine, SLO and cost series (thousands per engine) bypass the
	// registry: the series cache keeps their dto.Metric between renders.
	e.series = exposition.NewSeriesCache()
	e.render = exposition.NewRenderer(exposition.Options{
		Gatherer: e.gatherer,
		Engines: func(use exposition.Use) {
			e.series.GatherText(e.emitSeries, use)
		},
		Errors:   e.self.renderErrors,
		Duration: e.self.renderDuration,
		Logger:   e.logger,
		MinGap:   opts.Interval / 4,
		MaxAge:   opts.Interval,
	})
	return e
}

// Registry is the registry of the exporter's own and GPU series, where
// other collectors of the daemon may register; engine, SLO and cost series
// are not in it (see Gatherer).
func (e *Exporter) Registry() *prometheus.Registry { return e.reg }

// Gatherer gathers the exporter's own, GPU and engine series, without Go
// and process metrics (for tests and linting).
func (e *Exporter) Gatherer() prometheus.Gatherer {
	return prometheus.Gatherers{e.reg, (*engineGatherer)(e)}
}

// Start loads the first configuration and starts collecting until ctx
// ends; Wait blocks until every target goroutine has stopped.
func (e *Exporter) Start(ctx context.Context, load Loader) error {
	e.mu.Lock()
	e.ctx = ctx
	e.mu.Unlock()
	if err := e.Reload(load); err != nil {
		return err
	}
	if e.opts.GPU != nil {
		e.loops.Add(1)
		go func() {
			defer e.loops.Done()
			e.gpuLoop(ctx)
		}()
	}
	return nil
}

// Wait returns once ctx has ended and every goroutine of the exporter
// (targets, GPU cycle) has stopped, so that the GPU library can
// be closed safely after it.
func (e *Exporter) Wait() {
	<-e.ctx.Done()
	e.loops.Wait()
	// A reload in flight finishes first; later ones see the context ended.
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	e.mu.Lock()
	targets := e.targets
	e.mu.Unlock()
	for _, t := range targets {
		t.cancelLoop()
	}
	for _, t := range targets {
		t.wait()
	}
	// Keep-alive connections to the engines hold two goroutines each.
	e.transport.CloseIdleConnections()
}

// ApplyConfig starts new targets, stops removed ones and restarts changed
// ones. Unchanged targets keep running; a target whose engine and labels
// are unchanged but whose scrape settings or GPUs changed is rebuilt with
// its goodput state carried over, so its counters do not start again.
//
// Its cost is linear in the targets that changed, and the exporter's lock
// is held only to read the running set and to swap in the new one: the
// renderer and the status page keep answering while thousands of targets
// are built or stopped. Reloads run one at a time.
func (e *Exporter) ApplyConfig(cfg *config.Config) error {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	return e.apply(cfg)
}

// DefaultMaxTargets is --collect.max-targets' default, for serve and
// check-config alike.
const DefaultMaxTargets = 200

// CheckLimits refuses a configuration the exporter would refuse to run
// with maxTargets (0: no cap) for reasons of its own, past what
// config.Load checks: serve applies it to every load and reload, and
// check-config to the file it checks, so that both answer alike.
func CheckLimits(file *config.Config, maxTargets int) error {
	if n := len(file.Targets); maxTargets > 0 && n > maxTargets {
		return fmt.Errorf("%d targets configured, more than the %d of --collect.max-targets: each target holds its parse and goodput state (about 2 MiB for a vLLM engine of 664 series); raise the flag and the memory limit together", n, maxTargets)
	}
	return nil
}

// apply is ApplyConfig with reloadMu held: the file's targets and the
// discovered ones are reconciled together.
func (e *Exporter) apply(file *config.Config) error {
	if err := CheckLimits(file, e.opts.MaxTargets); err != nil {
		return err
	}
	cfg := e.withDiscovered(file)
	left := 0
	if limit := e.opts.MaxTargets; limit > 0 && len(cfg.Targets) > limit {
		// The file's targets come first: the discovered ones past the
		// cap wait, in discovery order, for room.
		left = len(cfg.Targets) - limit
		cfg.Targets = cfg.Targets[:limit:limit]
		e.logger.Warn("discovered targets left out: the daemon runs --collect.max-targets already", "left_out", left, "max_targets", limit)
	}
	e.self.targetsLeftOut.Set(float64(left))
	e.mu.Lock()
	ctx, running := e.ctx, e.targets
	e.mu.Unlock()
	if ctx == nil {
		return fmt.Errorf("exporter not running")
	}
	if ctx.Err() != nil {
		return fmt.Errorf("exporter stopped")
	}
	next := make(map[string]*target, len(cfg.Targets))
	kept := map[*target]bool{}
	heirs := map[*target]*target{} // rebuilt target -> the one it replaces
	var fresh []*target
	slos := cfg.GoodputSLOs()
	for i := range cfg.Targets {
		tc := cfg.Targets[i]
		timeout := cfg.EffectiveTimeout(&tc, e.opts.Timeout)
		old, ok := running[tc.Name]
		if ok && reflect.DeepEqual(old.cfg, tc) && old.timeout == timeout {
			next[tc.Name], kept[old] = old, true
			continue
		}
		t, err := newTarget(tc, timeout, slos, e)
		if err != nil {
			return err // nothing started or stopped yet
		}
		if ok && sameSeries(old.cfg, tc) {
			heirs[t] = old
		}
		next[tc.Name] = t
		fresh = append(fresh, t)
	}
	// Stop what goes, all at once: each stop waits for a scrape in flight
	// to notice its cancelled context.
	var gone []*target
	for _, old := range running {
		if !kept[old] {
			old.cancelLoop()
			gone = append(gone, old)
		}
	}
	for _, old := range gone {
		old.wait()
	}
	for t, old := range heirs {
		t.adopt(old, slos)
	}
	for t := range kept {
		t.reconfigure(slos)
	}
	ds := cfg.DiagnosisSettings()
	for _, t := range next {
		t.setDiagnosis(ds, slos)
	}
	names := make(map[string]bool, len(next))
	for name := range next {
		names[name] = true
	}
	e.models.keep(names)
	e.mu.Lock()
	e.cfg, e.fileCfg, e.targets = cfg, file, next
	e.mu.Unlock()
	for _, old := range gone {
		if next[old.cfg.Name] == nil {
			e.self.forget(old.cfg.Name)
		}
	}
	for _, t := range fresh {
		t.start(ctx, e.opts.Interval, e.opts.NoJitter)
	}
	e.render.Request()
	return nil
}

// sameSeries reports whether two configurations of a target produce the
// same series from the same engine: only then can goodput state carry over.
func sameSeries(a, b config.Target) bool {
	return a.URL == b.URL && a.Engine == b.Engine && a.Model == b.Model &&
		a.ModelLimit == b.ModelLimit && reflect.DeepEqual(seriesLabels(a), seriesLabels(b))
}

// sortedTargets returns the running targets by name.
func (e *Exporter) sortedTargets() []*target {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]*target, 0, len(e.targets))
	for _, t := range e.targets {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *target) int {
		switch {
		case a.cfg.Name < b.cfg.Name:
			return -1
		case a.cfg.Name > b.cfg.Name:
			return 1
		}
		return 0
	})
	return out
}

// config returns the running configuration.
func (e *Exporter) config() *config.Config {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cfg == nil {
		return &config.Config{}
	}
	return e.cfg
}

// warnOnce logs a warning the first time key is seen.
func (e *Exporter) warnOnce(key, msg string, args ...any) {
	e.mu.Lock()
	if e.warned == nil {
		e.warned = map[string]bool{}
	}
	said := e.warned[key]
	e.warned[key] = true
	e.mu.Unlock()
	if !said {
		e.logger.Warn(msg, args...)
	}
}
