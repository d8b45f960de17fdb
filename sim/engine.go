package sim

import (
	"errors"
	"fmt"
	"math"
	"time"
)

const never = time.Duration(math.MaxInt64)

// Engine is one simulated inference engine and its GPU on a virtual
// clock. It is not safe for concurrent use; Server wraps it for that.
type Engine struct {
	base Config
	cfg  Config // base with the current lever applied

	lever    Lever
	script   Scenario
	phase    int
	phaseEnd time.Duration

	now      time.Duration
	classes  []*classState
	waiting  deque
	running  []*request
	kv       *kvCache
	gpu      *gpu
	nextID   uint64
	randomID uint64

	stepping  bool
	stepStart time.Duration
	stepEnd   time.Duration
	plan      stepPlan
	lastStep  StepInfo
	stalled   bool
	hung      []*request
	draining  bool

	c     Counters
	h     hists
	win   logWindow
	truth *Truth

	// onStep, when set, sees every plan before it runs (tests).
	onStep func(*stepPlan)
}

// StepInfo describes the most recent engine step.
type StepInfo struct {
	Start, Duration             time.Duration
	Seqs                        int
	PrefillTokens, DecodeTokens int
	// ClockFactor is sm_clock / max_clock during the step.
	ClockFactor float64
}

// New builds an engine at virtual time 0 in the first phase of the
// scenario (healthy when there is none).
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sim config: %w", err)
	}
	cfg.Workload = cloneWorkload(cfg.Workload)
	if cfg.GPU.UUID == "" {
		cfg.GPU.UUID = uuidFromSeed(cfg.Seed)
	}
	e := &Engine{
		base:     cfg,
		script:   cfg.Scenario,
		phaseEnd: never,
		h:        newHists(cfg.Model.MaxModelLen),
		truth:    newTruth(cfg.Truth),
		nextID:   1,
	}
	e.kv = newKVCache(cfg.Engine.NumBlocks, cfg.Engine.BlockSize, cfg.Engine.PrefixCaching)
	e.gpu = newGPU(&e.base.GPU)
	lever := Healthy
	if len(e.script.Phases) > 0 {
		lever = e.script.Phases[0].Lever
		if d := e.script.Phases[0].Duration; d > 0 {
			e.phaseEnd = d
		}
	}
	e.apply(lever)
	return e, nil
}

func uuidFromSeed(seed uint64) string {
	x := seed*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	return fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", uint32(x>>32), uint16(x>>16), uint16(x), uint16(x>>48), x&0xffffffffffff)
}

// Now is the current virtual time.
func (e *Engine) Now() time.Duration { return e.now }

// Lever is the lever in force.
func (e *Engine) Lever() Lever { return e.lever }

// Config is the effective configuration: the baseline with the current
// lever applied.
func (e *Engine) Config() Config {
	c := e.cfg
	c.Workload = cloneWorkload(c.Workload)
	return c
}

// Truth is the ground truth recorded so far.
func (e *Engine) Truth() *Truth { return e.truth }

// SetLever switches to l now and ends any scenario script.
func (e *Engine) SetLever(l Lever) {
	e.phaseEnd = never
	e.script = Scenario{}
	e.apply(l)
}

// Advance runs the model for d of virtual time.
func (e *Engine) Advance(d time.Duration) { e.AdvanceTo(e.now + d) }

// AdvanceTo runs every event up to and including t. Reading the engine
// at t does not change it, so the same calls give the same results
// however often it is observed.
func (e *Engine) AdvanceTo(t time.Duration) {
	for {
		next := e.nextEvent()
		if next > t {
			break
		}
		e.gpu.advance(next)
		e.now = next
		e.handleEventsAt(next)
		if e.nextEvent() != next {
			e.maybeStep()
		}
	}
	if t > e.now {
		e.now = t
	}
}

// Drain stops all traffic and runs until every request has left the
// engine, or returns an error once limit of virtual time has passed.
func (e *Engine) Drain(limit time.Duration) error {
	e.draining = true
	e.applyWorkload(e.cfg.Workload)
	deadline := e.now + limit
	for e.hasWork() && e.now < deadline {
		e.AdvanceTo(min(e.nextEvent(), deadline))
	}
	if e.hasWork() {
		return errors.New("sim: drain limit reached with requests still in the engine")
	}
	return nil
}

func (e *Engine) hasWork() bool { return len(e.running)+e.waiting.len() > 0 }

func (e *Engine) nextEvent() time.Duration {
	next := e.phaseEnd
	if e.stepping {
		next = min(next, e.stepEnd)
	}
	for _, cs := range e.classes {
		next = min(next, cs.nextEvent())
	}
	return next
}

func (e *Engine) handleEventsAt(t time.Duration) {
	if e.stepping && e.stepEnd == t {
		e.finishStep()
	}
	if e.phaseEnd == t {
		e.nextPhase()
	}
	for _, cs := range e.classes {
		for cs.next == t {
			e.arrive(cs, -1)
			cs.scheduleNext(t)
		}
		for i, at := range cs.sessions {
			if at == t {
				cs.sessions[i] = never
				e.arrive(cs, i)
			}
		}
	}
}

func (e *Engine) nextPhase() {
	e.phase++
	if e.phase >= len(e.script.Phases) {
		if !e.script.Repeat {
			e.phaseEnd = never
			return
		}
		e.phase = 0
	}
	p := e.script.Phases[e.phase]
	e.phaseEnd = never
	if p.Duration > 0 {
		e.phaseEnd = e.now + p.Duration
	}
	if p.Abort {
		e.abortAll()
	}
	e.apply(p.Lever)
}

// abortAll ends every request in the engine as aborted: its clients were
// cut off. A step in flight skips the requests that left.
func (e *Engine) abortAll() {
	for e.waiting.len() > 0 {
		e.finish(e.waiting.popFront(), FinishAbort)
	}
	for _, r := range e.running {
		if r.state == stateRunning {
			e.finish(r, FinishAbort)
		}
	}
	clear(e.running)
	e.running = e.running[:0]
}

func (e *Engine) maybeStep() {
	if e.stepping || e.stalled || !e.hasWork() {
		return
	}
	e.startStep()
}
