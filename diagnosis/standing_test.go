package diagnosis

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// capped models the standing overload of an engine that slows down under
// load, behind a client that caps its requests in flight, with the
// metrics llm-d-inference-sim exposes (vLLM's names): a batch of at most
// maxSeqs, a first token after 100 ms and each next one after 20 ms, both
// times stretched by 1 + (factor−1)(n−1)/(maxSeqs−1) with n running (its
// --time-factor-under-load); TTFT observed without the queue wait; every
// token observed in the inter-token histogram as it streams; generated
// and prompt tokens and the finish counted only when a request completes;
// no preemption counter and an empty KV cache (its cache is off). The
// model is stepped every 10 ms.
type capped struct {
	rng                  *rand.Rand
	maxSeqs              int
	factor               float64
	rate                 float64 // client's requests per second
	cap                  int     // client's most requests in flight; 0: none
	minOut, maxOut       int     // output tokens, uniform
	waiting              []*cappedReq
	running              []*cappedReq
	now                  float64
	gen, prompt, stopped float64
	ttft, itl            *snapshot.Histogram
}

type cappedReq struct {
	out, done int
	next      float64 // time of its next token
}

func newCapped(seed uint64) *capped {
	return &capped{
		rng: rand.New(rand.NewPCG(seed, 37)), maxSeqs: 10, factor: 3, rate: 2, minOut: 30, maxOut: 90,
		ttft: &snapshot.Histogram{Bounds: []float64{0.05, 0.1, 0.2, 0.25, 0.5, 1, 2.5}, Cumulative: make([]float64, 7)},
		itl:  &snapshot.Histogram{Bounds: []float64{0.01, 0.025, 0.05, 0.075, 0.1}, Cumulative: make([]float64, 5)},
	}
}

func (c *capped) stretch() float64 {
	n := len(c.running)
	if n <= 1 {
		return 1
	}
	return 1 + (c.factor-1)*float64(n-1)/float64(c.maxSeqs-1)
}

// advance runs the model to time to (seconds).
func (c *capped) advance(to float64) {
	const dt = 0.01
	for c.now+dt <= to+1e-9 {
		c.now += dt
		// Arrivals: Poisson at rate, dropped (not sent) while the client
		// has cap requests in flight.
		for k := c.poisson(c.rate * dt); k > 0; k-- {
			if c.cap > 0 && len(c.waiting)+len(c.running) >= c.cap {
				break
			}
			c.waiting = append(c.waiting, &cappedReq{out: c.minOut + c.rng.IntN(c.maxOut-c.minOut+1)})
		}
		for len(c.running) < c.maxSeqs && len(c.waiting) > 0 {
			r := c.waiting[0]
			c.waiting = c.waiting[1:]
			c.running = append(c.running, r)
			r.next = c.now + 0.1*c.stretch()
		}
		kept := c.running[:0]
		for _, r := range c.running {
			if r.next <= c.now {
				if r.done == 0 {
					observe(c.ttft, 0.1*c.stretch(), 1)
					c.prompt += 100
				} else {
					observe(c.itl, 0.02*c.stretch(), 1)
				}
				r.done++
				r.next = c.now + 0.02*c.stretch()
				if r.done == r.out {
					c.gen += float64(r.out)
					c.stopped++
					continue
				}
			}
			kept = append(kept, r)
		}
		clear(c.running[len(kept):])
		c.running = kept
	}
}

func (c *capped) poisson(mean float64) int {
	// mean is small (a 10 ms step): one draw suffices.
	if c.rng.Float64() < mean {
		return 1
	}
	return 0
}

func (c *capped) snap(at time.Time) *snapshot.Snapshot {
	m := snapshot.Model{Name: "m"}
	m.Gauges[snapshot.Running] = some(float64(len(c.running)))
	m.Gauges[snapshot.Waiting] = some(float64(len(c.waiting)))
	m.Gauges[snapshot.KVCacheUsage] = some(0)
	m.Counters[snapshot.GenerationTokens] = some(c.gen)
	m.Counters[snapshot.PromptTokens] = some(c.prompt)
	m.Finished = map[string]float64{"stop": c.stopped}
	m.Hists[snapshot.TTFT] = c.ttft.Clone()
	m.Hists[snapshot.ITL] = c.itl.Clone()
	return &snapshot.Snapshot{Target: "t", Engine: snapshot.VLLM, Time: at, Models: []snapshot.Model{m}}
}

// The standing overload of issue 37, at 5 s and 1 s scrapes: 5 minutes
// at 2 req/s, then 12 req/s from a client capped at 300 in flight. The
// queue fills in about a minute and stands at 290 behind 10 running;
// TTFT is broken by the slowed engine (a 250 ms objective) or by the
// queue alone (500 ms). queue_growth must
// be raised within two windows of the onset and stay raised, once (one
// page), with nothing else raised (engine_stall least of all: tokens
// stream all along); and while the first 5 minutes raise nothing.
func TestStandingOverloadBehindClientCap(t *testing.T) {
	for _, tc := range []struct {
		seed   uint64
		scrape time.Duration
		out    [2]int
		ttft   float64 // the TTFT objective, seconds
	}{
		{1, 5 * time.Second, [2]int{30, 90}, 0.25},
		{2, time.Second, [2]int{30, 90}, 0.25},
		// Longer answers at a lower rate: some 5 s intervals see no
		// request complete, so no token is counted in them.
		{3, 5 * time.Second, [2]int{200, 400}, 0.25},
		{4, time.Second, [2]int{200, 400}, 0.25},
		// The default 500 ms objective: the engine's TTFT, which leaves
		// the queue out, is at most 300 ms and meets it; only the queue
		// says TTFT is broken (290 waiting at 2.7 served a second).
		{5, 5 * time.Second, [2]int{30, 90}, 0.5},
		{6, time.Second, [2]int{30, 90}, 0.5},
	} {
		t.Run(fmt.Sprintf("seed %d, %s scrapes, %d-%d tokens, TTFT %gs", tc.seed, tc.scrape, tc.out[0], tc.out[1], tc.ttft), func(t *testing.T) {
			c := newCapped(tc.seed)
			c.minOut, c.maxOut = tc.out[0], tc.out[1]
			// The healthy rate keeps about half the batch running.
			mean := float64(tc.out[0]+tc.out[1]) / 2
			c.rate = 5 / ((0.1 + 0.02*mean) * 1.9)
			healthy := c.rate
			d := New(DefaultSettings())
			d.SetObjectives(Objectives{DecodeLatency: 0.05, DecodeTarget: 0.95, TTFTLatency: tc.ttft, TTFTTarget: 0.99})
			const onset = 5 * time.Minute
			var raisedAt time.Duration = -1
			raises, lastRaised := 0, false
			var last Verdict
			for at := tc.scrape; at <= onset+10*time.Minute; at += tc.scrape {
				if at > onset {
					c.rate, c.cap = 6*healthy, 300
				}
				c.advance(at.Seconds())
				v := d.Observe(t0.Add(at), c.snap(t0.Add(at)), nil, false)
				last = v
				q := v.Modes[QueueGrowth].Raised
				for _, m := range v.Raised() {
					if m != QueueGrowth {
						t.Fatalf("at %s: %s raised (%s)", at, m, v.Modes[m].Evidence)
					}
				}
				if q && at <= onset {
					t.Fatalf("at %s, before the overload: queue_growth raised (%s)", at, v.Modes[QueueGrowth].Evidence)
				}
				if q && !lastRaised {
					raises++
					if raisedAt < 0 {
						raisedAt = at - onset
					}
				}
				lastRaised = q
			}
			if raisedAt < 0 || raisedAt > 2*time.Minute {
				t.Fatalf("queue_growth raised %s after the onset, want within 2m; waiting %.0f, running %.1f of ceiling %.0f, TTFT attainment %v: %s",
					raisedAt, last.Window.Waiting.V, last.Window.Running.V, last.Window.RunningCeiling.V, last.Window.TTFTAttainment, last.Modes[QueueGrowth].Evidence)
			}
			if raises != 1 || !lastRaised {
				t.Errorf("queue_growth raised %d times, raised at the end %v: want once, and still", raises, lastRaised)
			}
			t.Logf("raised %s after the onset; waiting %.0f, running %.1f", raisedAt, last.Window.Waiting.V, last.Window.Running.V)
		})
	}
}
