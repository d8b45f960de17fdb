package sim

import (
	"fmt"
	"strings"
	"time"
)

// Lever is a way to make the simulated engine misbehave: healthy, or one
// per failure mode. A lever changes the workload, the engine's settings
// or the GPU's surroundings the way the incident happens in production;
// the symptoms follow from the model.
type Lever string

// The levers.
const (
	Healthy             Lever = "healthy"
	QueueGrowth         Lever = "queue_growth"
	KVPreemption        Lever = "kv_preemption"
	PrefillInterference Lever = "prefill_interference"
	KVMonopoly          Lever = "kv_monopoly"
	PrefixCacheCollapse Lever = "prefix_cache_collapse"
	DecodeSaturation    Lever = "decode_saturation"
	GPUThrottling       Lever = "gpu_throttling"
	EngineStall         Lever = "engine_stall"
)

// Levers lists every lever, healthy first.
var Levers = []Lever{Healthy, QueueGrowth, KVPreemption, PrefillInterference, KVMonopoly,
	PrefixCacheCollapse, DecodeSaturation, GPUThrottling, EngineStall}

// ParseLever accepts a lever name.
func ParseLever(s string) (Lever, error) {
	for _, l := range Levers {
		if string(l) == s {
			return l, nil
		}
	}
	names := make([]string, len(Levers))
	for i, l := range Levers {
		names[i] = string(l)
	}
	return "", fmt.Errorf("unknown lever %q (want one of %s)", s, strings.Join(names, ", "))
}

// Description says what the lever changes, for help texts.
func (l Lever) Description() string {
	switch l {
	case Healthy:
		return "the baseline workload on the baseline engine"
	case QueueGrowth:
		return "an arrival surge past the engine's capacity"
	case KVPreemption:
		return "a smaller KV cache and longer outputs: running requests outgrow the cache and are preempted"
	case PrefillInterference:
		return "a steady stream of very long prompts whose prefill chunks stall everyone's decode steps"
	case KVMonopoly:
		return "a few long-context sessions that hold most of the KV cache"
	case PrefixCacheCollapse:
		return "every prompt gets a prefix of its own, so shared system prompts stop hitting the cache"
	case DecodeSaturation:
		return "vLLM's default max_num_seqs (1024) and token budget under load past the knee: a huge decode batch with slow steps"
	case GPUThrottling:
		return "a cooling failure: the GPU heats up and the driver lowers its clocks"
	case EngineStall:
		return "the step loop hangs mid-step; on recovery the hung batch errors and timed-out clients abort"
	}
	return ""
}

// LeverSpec sizes each lever's change.
type LeverSpec struct {
	// SurgeFactor multiplies every open-loop arrival rate (queue_growth).
	SurgeFactor float64
	// KVBlockFraction of the KV blocks remain (kv_preemption), as when
	// the engine comes back with less memory for the cache; outputs grow
	// by OutputFactor and max_tokens becomes LongMaxTokens.
	KVBlockFraction float64
	OutputFactor    float64
	LongMaxTokens   int
	// LongPrompts is the traffic added by prefill_interference.
	LongPrompts Class
	// LongContext is the closed-loop traffic added by kv_monopoly.
	LongContext Class
	// SaturationMaxNumSeqs and SaturationMaxBatchedTokens replace
	// max_num_seqs and max_num_batched_tokens (vLLM V1's defaults for the
	// OpenAI server on an 80 GB GPU) and SaturationRateFactor multiplies
	// the arrival rates (decode_saturation).
	SaturationMaxNumSeqs       int
	SaturationMaxBatchedTokens int
	SaturationRateFactor       float64
	// FailedInletC and ResistanceFactor describe a cooling failure
	// (gpu_throttling): hotter inlet air and worse heat transfer.
	FailedInletC     float64
	ResistanceFactor float64
}

// DefaultLeverSpec sizes the levers against DefaultConfig.
func DefaultLeverSpec() LeverSpec {
	return LeverSpec{
		SurgeFactor:     4,
		KVBlockFraction: 0.3,
		OutputFactor:    4,
		LongMaxTokens:   4096,
		LongPrompts: Class{
			Name: "long-prompts", Arrival: Constant, Rate: 0.5,
			Prompt: LogNormal(12000, 0.4, 4000, 30000), Output: LogNormal(60, 0.5, 1, 0), MaxTokens: 256,
		},
		LongContext: Class{
			Name: "long-context", Sessions: 4, ThinkTime: time.Second,
			Prompt: LogNormal(100000, 0.02, 97000, 103000), Output: LogNormal(6000, 0.1, 5000, 7000), MaxTokens: 16384,
			ClientTimeout: time.Hour,
		},
		SaturationMaxNumSeqs:       1024,
		SaturationMaxBatchedTokens: 8192,
		// 22 req/s: past the healthy engine's knee (16 req/s), where the
		// capped batch queues without bound (queue_growth); with the cap
		// lifted the same load shows up as a batch so large that its
		// decode steps break the chat SLO's TPOT objective instead.
		SaturationRateFactor: 2.2,
		FailedInletC:         50,
		ResistanceFactor:     1.8,
	}
}

// applyTo returns base with the lever's change.
func (l Lever) applyTo(base Config) Config {
	c := base
	c.Workload = cloneWorkload(base.Workload)
	ls := &base.Levers
	classes := c.Workload.Classes
	switch l {
	case QueueGrowth:
		for i := range classes {
			classes[i].Rate *= ls.SurgeFactor
		}
	case KVPreemption:
		c.Engine.NumBlocks = max(1, int(float64(c.Engine.NumBlocks)*ls.KVBlockFraction))
		for i := range classes {
			classes[i].Output = classes[i].Output.Scale(ls.OutputFactor)
			classes[i].MaxTokens = ls.LongMaxTokens
		}
	case PrefillInterference:
		c.Workload.Classes = append(classes, ls.LongPrompts)
	case KVMonopoly:
		c.Workload.Classes = append(classes, ls.LongContext)
	case PrefixCacheCollapse:
		for i := range classes {
			classes[i].RandomPrefix = true
		}
	case DecodeSaturation:
		c.Engine.MaxNumSeqs = ls.SaturationMaxNumSeqs
		c.Engine.MaxNumBatchedTokens = max(c.Engine.MaxNumBatchedTokens, ls.SaturationMaxBatchedTokens, ls.SaturationMaxNumSeqs)
		for i := range classes {
			classes[i].Rate *= ls.SaturationRateFactor
		}
	case GPUThrottling:
		c.GPU.InletC = ls.FailedInletC
		c.GPU.ThermalResistance *= ls.ResistanceFactor
	}
	return c
}

// apply switches the engine to lever l at e.now.
func (e *Engine) apply(l Lever) {
	e.lever = l
	e.cfg = l.applyTo(e.base)
	e.kv.resize(e.cfg.Engine.NumBlocks)
	e.gpu.env = gpuEnv{e.cfg.GPU.InletC, e.cfg.GPU.ThermalResistance, e.cfg.GPU.PowerLimitW}
	e.applyWorkload(e.cfg.Workload)
	stall := l == EngineStall
	switch {
	case stall && !e.stalled:
		// The step loop hangs inside the step in flight: its batch never
		// returns and the GPU spins in a kernel.
		e.stalled = true
		if e.stepping {
			e.stepping = false
			for _, it := range e.plan.items {
				e.hung = append(e.hung, it.r)
			}
			g := &e.cfg.GPU
			e.gpu.set(gpuSegment{powerW: g.IdlePowerW + 0.1*(g.MaxPowerW-g.IdlePowerW), busy: true, clockMHz: g.MaxSMClockMHz})
		}
	case !stall && e.stalled:
		// Recovery fails the hung batch; the rest carries on.
		e.stalled = false
		for _, r := range e.hung {
			if r.state == stateRunning {
				e.finish(r, FinishError)
			}
		}
		e.hung = nil
		kept := e.running[:0]
		for _, r := range e.running {
			if r.state == stateRunning {
				kept = append(kept, r)
			}
		}
		clear(e.running[len(kept):])
		e.running = kept
		e.gpu.set(e.gpu.idleSegment())
	}
	e.maybeStep()
}

func (e *Engine) applyWorkload(w Workload) {
	live := map[string]bool{}
	for i := range w.Classes {
		spec := &w.Classes[i]
		live[spec.Name] = true
		var cs *classState
		for _, x := range e.classes {
			if x.spec.Name == spec.Name {
				cs = x
			}
		}
		if cs == nil {
			cs = newClassState(e.base.Seed, len(e.classes), *spec)
			e.classes = append(e.classes, cs)
		}
		if e.draining {
			spec = nil
		}
		cs.reconfigure(spec, e.now)
	}
	for _, cs := range e.classes {
		if !live[cs.spec.Name] {
			cs.reconfigure(nil, e.now)
		}
	}
}
