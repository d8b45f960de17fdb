package sim

import "time"

// Shape is a healthy traffic shape other than the default chat: a
// different mix of prompt and output lengths, a different arrival
// process or a different model. A shape changes a DefaultConfig; the
// levers still apply on top of it.
type Shape struct {
	Name        string
	Description string
	apply       func(*Config)
}

// Apply returns base changed into the shape.
func (s Shape) Apply(base Config) Config {
	c := base
	c.Workload = cloneWorkload(base.Workload)
	if s.apply != nil {
		s.apply(&c)
	}
	return c
}

// Shapes are the healthy traffic shapes the failure-mode classifier is
// judged quiet on, the default chat first.
var Shapes = []Shape{
	{Name: "chat", Description: "the default chat traffic: prompts of about 1,000 tokens (384 of them a shared system prompt), about 250 output tokens, Poisson arrivals"},
	{Name: "rag", Description: "retrieval-augmented generation: prompts of about 6,500 tokens (a 512-token shared instruction and retrieved passages), about 200 output tokens",
		apply: func(c *Config) {
			cl := &c.Workload.Classes[0]
			cl.Prompt = LogNormal(6000, 0.4, 1500, 24000)
			cl.Output = LogNormal(180, 0.5, 1, 0)
			cl.PrefixGroups, cl.PrefixLen = 4, 512
		}},
	{Name: "short-chat", Description: "short exchanges: prompts of about 250 tokens (128 shared), about 40 output tokens",
		apply: func(c *Config) {
			cl := &c.Workload.Classes[0]
			cl.Prompt = LogNormal(120, 0.6, 8, 2000)
			cl.Output = LogNormal(40, 0.6, 1, 0)
			cl.MaxTokens = 256
			cl.PrefixLen = 128
		}},
	{Name: "bursty", Description: "the chat mix arriving in bursts of 8 requests on average, 50 ms apart (a fan-out, a retry storm), at the same mean rate",
		apply: func(c *Config) {
			cl := &c.Workload.Classes[0]
			cl.Arrival, cl.BurstSize, cl.BurstGap = Bursty, 8, 50*time.Millisecond
		}},
	{Name: "slow-model", Description: "the chat mix on a 14B model (48 layers, hidden 5120, 8 KV heads) on the same GPU: slower steps and a smaller KV cache",
		apply: func(c *Config) {
			c.Model = ModelSpec{
				Name:            "Qwen/Qwen2.5-14B-Instruct",
				Params:          14.8e9,
				WeightBytes:     29.6e9,
				Layers:          48,
				Hidden:          5120,
				KVBytesPerToken: 2 * 48 * 8 * 128 * 2,
				MaxModelLen:     32768,
			}
			// 80 GB at 0.9, less 29.6 GB of weights and about 4 GB of
			// activations, in blocks of 16 tokens.
			c.Engine.NumBlocks = 12200
			c.Workload.Classes[0].Prompt.Max = 16000
		}},
}

// ShapeByName returns the named shape.
func ShapeByName(name string) (Shape, bool) {
	for _, s := range Shapes {
		if s.Name == name {
			return s, true
		}
	}
	return Shape{}, false
}
