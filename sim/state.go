package sim

import "time"

// State is the engine at the current virtual time, in engine-neutral
// terms: the gauges and counters behind every exposition format.
type State struct {
	Now     time.Duration
	Lever   Lever
	Running int
	Waiting int
	// KVUsage is used blocks over the block count, 0..1.
	KVUsage        float64
	KVBlocksUsed   int
	KVBlocks       int
	KVBlockSize    int
	MaxNumSeqs     int
	Stalled        bool
	Counters       Counters
	LastStep       StepInfo
	PrefixEvicted  int64
	InFlightTokens int
}

// State reads the engine without changing it.
func (e *Engine) State() State {
	s := State{
		Now:           e.now,
		Lever:         e.lever,
		Running:       len(e.running),
		Waiting:       e.waiting.len(),
		KVUsage:       e.kv.usage(),
		KVBlocksUsed:  e.kv.used,
		KVBlocks:      e.kv.capacity,
		KVBlockSize:   e.kv.blockSize,
		MaxNumSeqs:    e.cfg.Engine.MaxNumSeqs,
		Stalled:       e.stalled,
		Counters:      e.c,
		LastStep:      e.lastStep,
		PrefixEvicted: e.kv.evictions,
	}
	for _, r := range e.running {
		s.InFlightTokens += r.numTokens()
	}
	return s
}

// GPU reads the simulated GPU at the current virtual time.
func (e *Engine) GPU() GPUState {
	return e.gpu.state(e.now, e.cfg.Engine.GPUMemoryUtilization)
}
