package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/exporter"
	"github.com/goodput-exporter/goodput-exporter/internal/memlimit"
	"github.com/goodput-exporter/goodput-exporter/internal/webserve"
	"github.com/goodput-exporter/goodput-exporter/otlp"
)

type serveCmd struct {
	ConfigFile    string        `name:"config.file" placeholder:"FILE" help:"YAML configuration file (targets). Reloaded on SIGHUP, and on POST /-/reload with --web.enable-lifecycle."`
	ListenAddress []string      `name:"web.listen-address" default:":9835" help:"Addresses to listen on for /metrics (repeatable)."`
	TelemetryPath string        `name:"web.telemetry-path" default:"/metrics" help:"Path under which to expose metrics."`
	WebConfigFile string        `name:"web.config.file" placeholder:"FILE" help:"exporter-toolkit web configuration file for TLS and basic auth."`
	Lifecycle     bool          `name:"web.enable-lifecycle" help:"Enable reloading the configuration with POST or PUT /-/reload (off: the endpoint answers 403). SIGHUP always reloads."`
	AllowedHosts  []string      `name:"web.allowed-host" placeholder:"NAME" help:"A host name /-/reload may be addressed by (repeatable), besides IP addresses, localhost, the machine's host name and the hosts of --web.listen-address: a request naming another Host is refused, as a DNS-rebinding page would send (e.g. the Service's DNS name when reloading through it)."`
	Pprof         bool          `name:"web.enable-pprof" help:"Serve Go's profiles (net/http/pprof) under /debug/pprof/ on --web.listen-address, behind --web.config.file's auth, to find where memory or CPU goes (see docs/reliability.md). Off by default."`
	Interval      time.Duration `name:"collect.interval" default:"5s" help:"How often each engine is scraped."`
	Timeout       time.Duration `name:"collect.timeout" help:"Timeout of one engine scrape when the configuration sets none (default: 4s, or the interval when that is shorter)."`
	MaxReqRate    float64       `name:"collect.max-request-rate" default:"10000" help:"Requests per second no engine counter of one model can exceed: a larger increase in one interval is a glitch, added nowhere (0: no bound)."`
	MaxTokenRate  float64       `name:"collect.max-token-rate" default:"2000000" help:"Tokens per second no engine counter of one model can exceed: a larger increase in one interval is a glitch, added nowhere (0: no bound)."`
	Targets       []string      `name:"target" sep:"none" placeholder:"NAME=URL" help:"An engine /metrics URL to scrape, without a configuration file (repeatable)."`
	MemoryLimit   string        `name:"runtime.memory-limit" env:"GOODPUT_EXPORTER_MEMORY_LIMIT" placeholder:"SIZE" help:"The container's memory limit, to size the Go runtime's soft limit from (the Helm chart passes resources.limits.memory). Default: the cgroup's (v2 memory.max, v1 memory.limit_in_bytes). GOMEMLIMIT, when set, wins over both."`
	MemoryRatio   float64       `name:"runtime.memory-limit-ratio" default:"0.8" help:"Share of the container's memory limit given to the Go runtime as its soft limit (debug.SetMemoryLimit); the rest is for memory the runtime does not count."`
	MaxTargets    int           `name:"collect.max-targets" default:"${max_targets}" help:"Most targets one daemon runs, configured and discovered together (0: no cap): a configuration naming more is refused, discovered targets past it are left out (goodput_exporter_targets_left_out). The chart's 192Mi memory limit was measured with 200."`
	MaxModels     int           `name:"collect.max-models" default:"2000" help:"Most models read over all targets (0: no cap but each target's model_limit): each target may always read its share, max-models / max-targets (10 at the defaults), and more up to its model_limit while the targets together hold fewer; a new model past that is left out as past model_limit. The chart's 192Mi memory limit was measured with 2000."`
	BodyBudget    string        `name:"collect.body-budget" default:"64MiB" placeholder:"SIZE" help:"Most bytes of engine bodies held at once over all targets; a body that finds no room is refused as body_too_large (reads of up to an eighth of it wait for room until their timeout)."`
	GPU           gpuFlags      `embed:""`
	OTLP          otlpFlags     `embed:""`

	// Kubernetes discovery: the engines among this node's pods.
	Kubernetes kubernetesFlags `embed:""`
}

// Validate checks the flags before anything starts.
func (s *serveCmd) Validate() error {
	if s.Interval <= 0 {
		return errors.New("--collect.interval must be positive")
	}
	if s.Timeout < 0 || s.Timeout > s.Interval {
		return fmt.Errorf("--collect.timeout (%v) must be positive and not longer than --collect.interval (%v)", s.Timeout, s.Interval)
	}
	if s.MaxReqRate < 0 || s.MaxTokenRate < 0 {
		return errors.New("--collect.max-request-rate and --collect.max-token-rate must not be negative")
	}
	if s.MaxModels < 0 {
		return errors.New("--collect.max-models must not be negative (0: no cap but each target's model_limit)")
	}
	if s.MaxTargets < 0 {
		return errors.New("--collect.max-targets must not be negative (0: no cap)")
	}
	if !strings.HasPrefix(s.TelemetryPath, "/") || s.TelemetryPath == "/" {
		return fmt.Errorf("--web.telemetry-path %q must start with / and not be /", s.TelemetryPath)
	}
	if err := s.OTLP.validate(); err != nil {
		return err
	}
	if err := s.Kubernetes.validate(); err != nil {
		return err
	}
	if s.MemoryRatio < 0 || s.MemoryRatio > 1 {
		return fmt.Errorf("--runtime.memory-limit-ratio %v must be in (0, 1]", s.MemoryRatio)
	}
	if s.MemoryLimit != "" {
		if _, err := config.ParseByteSize(s.MemoryLimit); err != nil {
			return fmt.Errorf("--runtime.memory-limit: %w", err)
		}
	}
	if s.BodyBudget != "" {
		if _, err := config.ParseByteSize(s.BodyBudget); err != nil {
			return fmt.Errorf("--collect.body-budget: %w", err)
		}
	}
	_, err := config.ParseTargetFlags(s.Targets)
	return err
}

// defaultTimeout is the scrape timeout when neither the flag nor the
// file sets one, clamped to the interval as Prometheus clamps its default
// scrape timeout (10s) to the scrape interval.
const defaultTimeout = 4 * time.Second

// timeout is --collect.timeout, or when it is not given (0) the default
// clamped to the interval. Only a timeout given explicitly can be longer
// than the interval, and Validate refuses that.
func (s *serveCmd) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return min(defaultTimeout, s.Interval)
}

// loader reads the file (if any) and appends the --target flags.
func (s *serveCmd) loader() exporter.Loader {
	return func() (*config.Config, error) {
		cfg, err := config.Parse(nil)
		if s.ConfigFile != "" {
			cfg, err = config.Load(s.ConfigFile)
		}
		if err != nil {
			return nil, err
		}
		extra, err := config.ParseTargetFlags(s.Targets)
		if err != nil {
			return nil, err
		}
		if err := cfg.AddTargets(extra); err != nil {
			return nil, err
		}
		return cfg, nil
	}
}

func (s *serveCmd) Run(e *env) error {
	s.setMemoryLimit(e)
	if s.WebConfigFile != "" {
		if err := web.Validate(s.WebConfigFile); err != nil {
			return fmt.Errorf("--web.config.file: %w", err)
		}
	}
	// Listen first: a taken port must fail the start, not leave a daemon
	// that collects with nothing serving it.
	listeners, err := webserve.ListenAll(s.ListenAddress)
	if err != nil {
		return err
	}
	var traces *otlp.Listeners // nil: no OTLP receiver
	if s.OTLP.enabled() {
		if traces, err = otlp.Listen(s.OTLP.GRPCAddress, s.OTLP.HTTPAddress); err != nil {
			webserve.CloseAll(listeners)
			return err
		}
	}
	ctx, cancel := context.WithCancel(e.ctx)
	gm := s.GPU.manager(e.logger) // nil with --gpu.backend=none
	if gm != nil {
		defer gm.Close()
	}
	budget, _ := config.ParseByteSize(s.BodyBudget) // checked by Validate; "" (0): the default
	ex := exporter.New(exporter.Options{Interval: s.Interval, Timeout: s.timeout(), Logger: e.logger, GPU: gm, EnableLifecycle: s.Lifecycle,
		MaxRequestRate: offIsNegative(s.MaxReqRate), MaxTokenRate: offIsNegative(s.MaxTokenRate), BodyBudget: int64(budget), MaxTargets: s.MaxTargets, MaxModels: s.MaxModels,
		Hosts: append(listenHosts(s.ListenAddress), s.AllowedHosts...), EnablePprof: s.Pprof})
	load := s.loader()
	if err := ex.Start(ctx, load); err != nil {
		cancel()
		webserve.CloseAll(listeners)
		traces.Close()
		return err
	}
	if traces != nil {
		if err := traces.Serve(ctx, s.OTLP.receiver(ex, e), s.WebConfigFile, e.logger); err != nil {
			cancel()
			ex.Wait()
			webserve.CloseAll(listeners)
			traces.Close()
			return err
		}
	}
	stopDiscovery, err := s.Kubernetes.start(ctx, ex, e.logger)
	if err != nil {
		cancel()
		traces.Shutdown()
		ex.Wait()
		webserve.CloseAll(listeners)
		return err
	}
	defer func() {
		cancel()
		traces.Shutdown()
		stopDiscovery()
		ex.Wait()
	}()

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				ex.Reload(load)
			}
		}
	}()

	var reload exporter.Loader
	if s.ConfigFile != "" {
		reload = load
	}
	srv := &http.Server{Handler: ex.Handler(s.TelemetryPath, reload), ReadHeaderTimeout: 10 * time.Second}
	return webserve.Serve(ctx, srv, listeners, s.WebConfigFile, e.logger)
}

// offIsNegative maps a flag's 0 (no bound) to the options' negative.
func offIsNegative(v float64) float64 {
	if v == 0 {
		return -1
	}
	return v
}

// setMemoryLimit gives the Go runtime a soft memory limit under the
// container's (internal/memlimit), so that garbage is collected before the
// kernel's OOM killer counts it. A failure to read the cgroup is logged:
// the daemon runs on, as it did before, without a soft limit.
func (s *serveCmd) setMemoryLimit(e *env) {
	var limit int64
	if s.MemoryLimit != "" {
		v, _ := config.ParseByteSize(s.MemoryLimit) // checked by Validate
		limit = int64(v)
	}
	ratio := s.MemoryRatio
	if ratio == 0 {
		ratio = memlimit.DefaultRatio
	}
	set, err := memlimit.Apply(os.Getenv, limit, ratio, os.DirFS("/"))
	if err != nil {
		e.logger.Warn("no soft memory limit: the container's limit could not be read", "err", err)
		return
	}
	e.logger.Info(set.String())
}

// listenHosts are the host names of listen addresses ("" and wildcards
// left out: an IP address is always accepted).
func listenHosts(addrs []string) []string {
	var hosts []string
	for _, a := range addrs {
		if h, _, err := net.SplitHostPort(a); err == nil && h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}
