package sim

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ServerOptions tune how a Server maps wall time to virtual time.
type ServerOptions struct {
	// Speed is virtual seconds per wall second; 0 means 1 (real time).
	Speed float64
	// Tick is how often Run advances the model; 0 means 100ms.
	Tick time.Duration
	// Clock is the wall clock; nil means time.Now.
	Clock func() time.Time
}

// Server runs one simulated engine against the wall clock at a chosen
// speed and serves its metrics. All methods are safe for concurrent use;
// every read first brings the model up to the current virtual time.
type Server struct {
	mu        sync.Mutex
	e         *Engine
	speed     float64
	tick      time.Duration
	clock     func() time.Time
	wallStart time.Time
}

// NewServer builds the engine; virtual time 0 is now. A zero
// cfg.StartUnix is set from the clock.
func NewServer(cfg Config, o ServerOptions) (*Server, error) {
	s := &Server{speed: o.Speed, tick: o.Tick, clock: o.Clock}
	if s.speed <= 0 {
		s.speed = 1
	}
	if s.tick <= 0 {
		s.tick = 100 * time.Millisecond
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	s.wallStart = s.clock()
	if cfg.StartUnix == 0 {
		cfg.StartUnix = float64(s.wallStart.UnixNano()) / 1e9
	}
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	s.e = e
	return s, nil
}

// Run advances the model every tick until ctx is done, then returns nil.
func (s *Server) Run(ctx context.Context) error {
	t := time.NewTicker(s.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s.Do(func(*Engine) {})
		}
	}
}

// virtualNow is the virtual time the wall clock corresponds to.
func (s *Server) virtualNow() time.Duration {
	return time.Duration(float64(s.clock().Sub(s.wallStart)) * s.speed)
}

// Do runs fn with the engine brought up to the current virtual time,
// holding the lock; fn must not keep the engine.
func (s *Server) Do(fn func(e *Engine)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := s.virtualNow(); now > s.e.Now() {
		s.e.AdvanceTo(now)
	}
	fn(s.e)
}

// Now is the current virtual time.
func (s *Server) Now() (t time.Duration) {
	s.Do(func(e *Engine) { t = e.Now() })
	return t
}

// Lever is the lever in force.
func (s *Server) Lever() (l Lever) {
	s.Do(func(e *Engine) { l = e.Lever() })
	return l
}

// SetLever switches the lever now, ending any scenario script.
func (s *Server) SetLever(l Lever) { s.Do(func(e *Engine) { e.SetLever(l) }) }

// Evaluate judges the requests that finished in [from, to) of virtual time.
func (s *Server) Evaluate(from, to time.Duration, th Thresholds) (r Report) {
	s.Do(func(e *Engine) { r = e.Truth().Evaluate(from, to, th) })
	return r
}

// Handler serves the engine's /metrics in format f.
func (s *Server) Handler(f Format) http.Handler {
	h := s.serve(func(e *Engine, b *strings.Builder) error { return e.WriteMetrics(b, f) })
	if f != FormatLlamaCPP {
		return h
	}
	var start string
	s.Do(func(e *Engine) { start = e.llamacppProcessStart() })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Process-Start-Time-Unix", start)
		h.ServeHTTP(w, r)
	})
}

// GPUHandler serves the GPU in dcgm-exporter format.
func (s *Server) GPUHandler() http.Handler {
	return s.serve(func(e *Engine, b *strings.Builder) error { return e.WriteGPUMetrics(b) })
}

func (s *Server) serve(write func(*Engine, *strings.Builder) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var b strings.Builder
		var err error
		s.Do(func(e *Engine) { err = write(e, &b) })
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", ContentType)
		_, _ = w.Write([]byte(b.String()))
	})
}
