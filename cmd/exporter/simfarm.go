package main

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

// farmEngine is one simulated engine served on loopback.
type farmEngine struct {
	name   string
	format sim.Format
	srv    *sim.Server
	url    string
}

// farm runs simulated engines and one dcgm-exporter-format endpoint for
// all their GPUs, each on its own loopback port.
type farm struct {
	engines []*farmEngine
	gpuURL  string
	servers []*http.Server
}

// farmSpec says what to simulate.
type farmSpec struct {
	formats []sim.Format // one engine per entry
	rate    float64      // total req/s per engine; 0 keeps the default workload
	speed   float64
	seed    uint64
	// scenarios[i] scripts engine i; missing or empty means healthy.
	scenarios []sim.Scenario
	// truthLog, when set, gives the writer of engine i's JSON-lines log of
	// finished requests.
	truthLog func(i int) io.Writer
	// listen is host:port of the first engine; the others and the GPU
	// endpoint take the following ports (port 0: any free ports).
	listen string
	// clock, when set, is the wall clock the simulations follow (tests
	// freeze and step it).
	clock func() time.Time
	// maxClock adds DCGM_FI_DEV_MAX_SM_CLOCK to the GPU endpoint.
	maxClock bool
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

func startFarm(ctx context.Context, spec farmSpec) (*farm, error) {
	host, portStr, err := net.SplitHostPort(spec.listen)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", spec.listen, err)
	}
	base, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", spec.listen, err)
	}
	listen := func(i int) (net.Listener, error) {
		port := 0
		if base != 0 {
			port = base + i
		}
		return net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	}
	f := &farm{}
	for i, format := range spec.formats {
		cfg := withRate(sim.DefaultConfig(), spec.rate)
		cfg.Seed = spec.seed + uint64(i)
		cfg.GPU.Index = i
		cfg.GPU.PCIBusID = fmt.Sprintf("00000000:%02X:00.0", 0x18+i)
		cfg.GPU.ExportMaxSMClock = spec.maxClock
		if i < len(spec.scenarios) {
			cfg.Scenario = spec.scenarios[i]
		}
		if spec.truthLog != nil {
			cfg.Truth.Log = spec.truthLog(i)
		}
		srv, err := sim.NewServer(cfg, sim.ServerOptions{Speed: spec.speed, Clock: spec.clock})
		if err != nil {
			f.close()
			return nil, err
		}
		l, err := listen(i)
		if err != nil {
			f.close()
			return nil, err
		}
		e := &farmEngine{name: fmt.Sprintf("%s-%d", format, i), format: format, srv: srv, url: "http://" + l.Addr().String() + "/metrics"}
		f.engines = append(f.engines, e)
		f.serve(l, srv.Handler(format))
		go srv.Run(ctx)
	}
	l, err := listen(len(spec.formats))
	if err != nil {
		f.close()
		return nil, err
	}
	f.gpuURL = "http://" + l.Addr().String() + "/metrics"
	f.serve(l, http.HandlerFunc(f.gpuMetrics))
	go func() {
		<-ctx.Done()
		f.close()
	}()
	return f, nil
}

func (f *farm) serve(l net.Listener, h http.Handler) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	s := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	f.servers = append(f.servers, s)
	go s.Serve(l)
}

func (f *farm) close() {
	for _, s := range f.servers {
		s.Close()
	}
}

// gpuMetrics serves every engine's GPU as one dcgm-exporter does for a
// node: the families merged, one series per GPU.
func (f *farm) gpuMetrics(w http.ResponseWriter, _ *http.Request) {
	merged := map[string]*dto.MetricFamily{}
	var order []string
	for _, e := range f.engines {
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
