package demo

import (
	"context"
	"math"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector/gpu"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/exporter"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// steppedClock is a wall clock the test moves by hand.
type steppedClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *steppedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *steppedClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// A simulated engine and its GPU served in dcgm-exporter's format, read by
// the daemon: the increase of llm_engine_gpu_energy_joules_total over the
// increase of llm_generation_tokens_total must be the simulator's own
// joules per token within 2 %. The simulation's clock is held still while
// the daemon catches up, so that both readings describe the same instant.
func TestJoulesPerTokenEndToEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := &steppedClock{now: time.Unix(1767225600, 0)}
	f, err := StartFarm(ctx, FarmSpec{Formats: []sim.Format{sim.FormatVLLM}, Speed: 1, Seed: 7, Listen: "127.0.0.1:0", Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	backend, err := gpu.NewDCGMExporter(gpu.DCGMExporterOptions{URL: f.GPUURL})
	if err != nil {
		t.Fatal(err)
	}
	interval := 50 * time.Millisecond
	ex := exporter.New(exporter.Options{Interval: interval, Timeout: time.Second, GPU: gpu.NewManager(gpu.ManagerOptions{Backend: backend, Clock: clock.Now})})
	load := func() (*config.Config, error) {
		cfg, _ := config.Parse(nil)
		return cfg, cfg.AddTargets([]config.Target{{Name: "e", URL: f.Engines[0].URL, GPUs: []string{"0"}}})
	}
	if err := ex.Start(ctx, load); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		ex.Wait()
	}()
	web := httptest.NewServer(ex.Handler("/metrics", nil))
	defer web.Close()
	v := &demoView{metricsURL: web.URL + "/metrics"}
	engine := map[string]string{"target": "e"}

	// settle waits until the daemon has scraped the frozen engine, then
	// a few GPU cycles more, and returns its reading and the simulator's.
	settle := func() (energy, tokens, trueJ, trueTok float64) {
		f.Engines[0].srv.Do(func(e *sim.Engine) {
			trueJ, trueTok = e.GPU().EnergyMJ/1000, float64(e.State().Counters.GenerationTokens)
		})
		deadline := time.Now().Add(20 * time.Second)
		for {
			r, err := v.read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tokens, _ = r.sum("llm_generation_tokens_total", engine)
			if tokens == trueTok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the daemon never caught up: %v tokens, simulator %v", tokens, trueTok)
			}
			time.Sleep(interval)
		}
		time.Sleep(20 * interval) // GPU cycles on the frozen counter
		// On a busy machine the first GPU cycle that attributes the GPU can
		// come later than 20 intervals: wait for the series (the counter
		// is frozen with the clock, so any reading describes this instant).
		var ok bool
		for wait := time.Now().Add(20 * time.Second); ; time.Sleep(interval) {
			r, err := v.read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if energy, ok = r.sum("llm_engine_gpu_energy_joules_total", engine); ok || time.Now().After(wait) {
				break
			}
		}
		if !ok {
			t.Fatal("no llm_engine_gpu_energy_joules_total")
		}
		return energy, tokens, trueJ, trueTok
	}
	clock.Add(30 * time.Second) // warm up
	e1, t1, te1, tt1 := settle()
	clock.Add(5 * time.Minute)
	e2, t2, te2, tt2 := settle()

	live := (e2 - e1) / (t2 - t1)
	truth := (te2 - te1) / (tt2 - tt1)
	t.Logf("joules per token over 5 simulated minutes: daemon %.4f, simulator %.4f (%+.3f %%)", live, truth, 100*(live/truth-1))
	if t2 <= t1 || math.Abs(live/truth-1) > 0.02 {
		t.Errorf("daemon says %.4f J/token, the simulator %.4f: more than 2 %% apart", live, truth)
	}
}
