package sim

import "time"

// stepCost is the roofline estimate of one engine step at full clocks.
type stepCost struct {
	compute, memory, overhead time.Duration
}

// busy is the time the step takes at full clocks: compute and memory
// traffic overlap, the fixed overheads do not.
func (c stepCost) busy() time.Duration { return max(c.compute, c.memory) + c.overhead }

// costOf prices a step: every scheduled token costs 2*Params FLOPs plus
// attention over its context; the weights are read once and every
// scheduled sequence's KV cache is read once.
func costOf(m *ModelSpec, g *GPUSpec, p *stepPlan) stepCost {
	tokens := float64(p.prefillTokens + p.decodeTokens)
	flops := 2*m.Params*tokens + 4*float64(m.Layers*m.Hidden)*p.attnPairs
	bytes := m.WeightBytes + m.KVBytesPerToken*float64(p.kvRead)
	return stepCost{
		compute:  seconds(flops / (g.PeakFLOPS * g.ComputeEfficiency)),
		memory:   seconds(bytes / (g.MemBandwidth * g.MemEfficiency)),
		overhead: g.StepOverhead + time.Duration(len(p.items))*g.PerSeqOverhead,
	}
}

func seconds(s float64) time.Duration { return time.Duration(s*1e9 + 0.5) }

func secs(d time.Duration) float64 { return d.Seconds() }
