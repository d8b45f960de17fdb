package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/goodput-exporter/goodput-exporter/sim"
)

// Engine is one simulated engine served on loopback.
type Engine struct {
	Name   string // its target name: format-index
	Format sim.Format
	URL    string // its /metrics
	srv    *sim.Server
}

// Farm runs simulated engines and one dcgm-exporter-format endpoint for
// all their GPUs, each on its own loopback port.
type Farm struct {
	Engines []*Engine
	GPUURL  string
	servers []*http.Server
}

// FarmSpec says what to simulate.
type FarmSpec struct {
	Formats []sim.Format // one engine per entry
	Rate    float64      // total req/s per engine; 0 keeps the default workload
	Speed   float64
	Seed    uint64
	// Scenarios[i] scripts engine i; missing or empty means healthy.
	Scenarios []sim.Scenario
	// TruthLog, when set, gives the writer of engine i's JSON-lines log of
	// finished requests.
	TruthLog func(i int) io.Writer
	// Listen is host:port of the first engine; the others and the GPU
	// endpoint take the following ports (port 0: any free ports).
	Listen string
	// Clock, when set, is the wall clock the simulations follow (tests
	// freeze and step it).
	Clock func() time.Time
	// MaxClock adds DCGM_FI_DEV_MAX_SM_CLOCK to the GPU endpoint.
	MaxClock bool
}

// withRate scales the open-loop classes of the default workload to a
// total rate, keeping their proportions.
func withRate(cfg sim.Config, rate float64) sim.Config {
	if rate <= 0 {
		return cfg
	}
	total := 0.0
	for _, c := range cfg.Workload.Classes {
		if c.Sessions == 0 {
			total += c.Rate
		}
	}
	cfg.Workload.Classes = slices.Clone(cfg.Workload.Classes)
	for i := range cfg.Workload.Classes {
		if cfg.Workload.Classes[i].Sessions == 0 && total > 0 {
			cfg.Workload.Classes[i].Rate *= rate / total
		}
	}
	return cfg
}

// StartFarm serves the engines and the GPU endpoint until ctx ends.
func StartFarm(ctx context.Context, spec FarmSpec) (*Farm, error) {
	host, portStr, err := net.SplitHostPort(spec.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", spec.Listen, err)
	}
	base, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", spec.Listen, err)
	}
	listen := func(i int) (net.Listener, error) {
		port := 0
		if base != 0 {
			port = base + i
		}
		return net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	}
	f := &Farm{}
	for i, format := range spec.Formats {
		cfg := withRate(sim.DefaultConfig(), spec.Rate)
		cfg.Seed = spec.Seed + uint64(i)
		cfg.GPU.Index = i
		cfg.GPU.PCIBusID = fmt.Sprintf("00000000:%02X:00.0", 0x18+i)
		cfg.GPU.ExportMaxSMClock = spec.MaxClock
		if i < len(spec.Scenarios) {
			cfg.Scenario = spec.Scenarios[i]
		}
		if spec.TruthLog != nil {
			cfg.Truth.Log = spec.TruthLog(i)
		}
		srv, err := sim.NewServer(cfg, sim.ServerOptions{Speed: spec.Speed, Clock: spec.Clock})
		if err != nil {
			f.close()
			return nil, err
		}
		l, err := listen(i)
		if err != nil {
			f.close()
			return nil, err
		}
		e := &Engine{Name: fmt.Sprintf("%s-%d", format, i), Format: format, srv: srv, URL: "http://" + l.Addr().String() + "/metrics"}
		f.Engines = append(f.Engines, e)
		f.serve(l, srv.Handler(format))
		go srv.Run(ctx)
	}
	l, err := listen(len(spec.Formats))
	if err != nil {
		f.close()
		return nil, err
	}
	f.GPUURL = "http://" + l.Addr().String() + "/metrics"
	f.serve(l, http.HandlerFunc(f.gpuMetrics))
	go func() {
		<-ctx.Done()
		f.close()
	}()
	return f, nil
}

func (f *Farm) serve(l net.Listener, h http.Handler) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	s := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	f.servers = append(f.servers, s)
	go s.Serve(l)
}

func (f *Farm) close() {
	for _, s := range f.servers {
		s.Close()
	}
}

// gpuMetrics serves every engine's GPU as one dcgm-exporter does for a
// node: the families merged, one series per GPU.
func (f *Farm) gpuMetrics(w http.ResponseWriter, _ *http.Request) {
	merged := map[string]*dto.MetricFamily{}
	var order []string
	for _, e := range f.Engines {
		var buf bytes.Buffer
		e.srv.Do(func(en *sim.Engine) { en.WriteGPUMetrics(&buf) })
		p := expfmt.NewTextParser(model.LegacyValidation)
		mfs, err := p.TextToMetricFamilies(&buf)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		for name, mf := range mfs {
			if m, ok := merged[name]; ok {
				m.Metric = append(m.Metric, mf.Metric...)
				continue
			}
			merged[name] = mf
			order = append(order, name)
		}
	}
	slices.Sort(order)
	w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, name := range order {
		enc.Encode(merged[name])
	}
}
