package exporter

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector/gpu"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// gpuUsage is a target's share of the node's GPUs as of the last GPU cycle.
type gpuUsage struct {
	gpus float64
	ok   bool
	// devs are the readings of the GPUs the target holds, for diagnosis.
	devs []gpu.Device
}

// gpuLoop reads the GPUs once per interval, after the targets' scrapes
// have had a chance to land, and attributes them to targets by the
// generation tokens each produced since the previous cycle.
func (e *Exporter) gpuLoop(ctx context.Context) {
	tick := time.NewTicker(e.opts.Interval)
	defer tick.Stop()
	base := map[string]map[string]float64{} // per target and model, generation tokens at the previous cycle
	for {
		e.gpuCycle(ctx, base)
		// Targets render after each scrape and pick the GPU state up; a
		// render of its own would double the rendering cost.
		if len(e.sortedTargets()) == 0 {
			e.render.Request()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (e *Exporter) gpuCycle(ctx context.Context, base map[string]map[string]float64) {
	targets := e.sortedTargets()
	infos := make([]gpu.TargetInfo, len(targets))
	seen := map[string]bool{}
	for i, t := range targets {
		tokens := t.generationTokens()
		delta := tokenDelta(base[t.cfg.Name], tokens)
		base[t.cfg.Name] = tokens
		seen[t.cfg.Name] = true
		infos[i] = gpu.TargetInfo{
			Name: t.cfg.Name, Namespace: t.cfg.Namespace, Pod: t.cfg.Pod,
			Port: localPort(t.cfg.URL), GPUs: t.cfg.GPUs, GenerationTokens: delta,
		}
	}
	for name := range base {
		if !seen[name] {
			delete(base, name)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, e.opts.Interval)
	defer cancel()
	usage, err := e.opts.GPU.Collect(cctx, e.opts.GPU.Now(), infos)
	if err != nil && ctx.Err() == nil {
		e.logger.Debug("GPU collection", "err", err)
	}
	for i, t := range targets {
		u := gpuUsage{}
		if i < len(usage) && usage[i].HeldGPUs > 0 {
			u = gpuUsage{gpus: usage[i].HeldGPUs, ok: true, devs: e.opts.GPU.TargetDevices(t.cfg.Name)}
		}
		t.mu.Lock()
		t.gpu = u
		t.mu.Unlock()
	}
}

// generationTokens returns the target's cumulative generation tokens per
// model, as of its last successful scrape.
func (t *target) generationTokens() map[string]float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]float64{}
	if s := t.state.snap; s != nil {
		for _, m := range s.Models {
			if v := m.Counters[snapshot.GenerationTokens]; v.OK {
				out[m.Name] = v.V
			}
		}
	}
	return out
}

// tokenDelta is the generation tokens produced since prev, model by model
// and reset-aware: a counter that went down started again (its value is
// the increase), a model seen for the first time only sets its baseline,
// and a model that vanished adds nothing. Summing first would read a
// vanished model as a restart of the whole target.
func tokenDelta(prev, cur map[string]float64) float64 {
	sum := 0.0
	for model, v := range cur {
		p, had := prev[model]
		switch {
		case !had:
		case v < p:
			sum += v
		default:
			sum += v - p
		}
	}
	return sum
}

// localPort is the TCP port of a target URL whose host is this machine
// (loopback or one of its interface addresses), where process attribution
// can find the listening engine; 0 otherwise, so that an engine elsewhere
// is never matched to a local process that happens to use the same port.
func localPort(raw string) int {
	u, err := url.Parse(raw)
	if err != nil {
		return 0
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback() && !isLocalAddr(ip)) {
		return 0
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	p, _ := strconv.Atoi(port)
	return p
}

func isLocalAddr(ip net.IP) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}
