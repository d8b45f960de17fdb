package config

import "github.com/goodput-exporter/goodput-exporter/goodput"

// Pricing is what the node's GPUs cost, for cost per good token.
type Pricing struct {
	// Currency is an ISO 4217 code or any label the dashboards show.
	Currency string `yaml:"currency"`
	// GPUHour is the price of one GPU for one hour.
	GPUHour float64 `yaml:"gpu_hour"`
	// NodeHour is the price of the whole node for one hour, shared by its
	// NodeGPUs GPUs.
	NodeHour float64 `yaml:"node_hour"`
	NodeGPUs int     `yaml:"node_gpus"`
}

// Goodput returns the pricing in the form the goodput maths takes.
func (p *Pricing) Goodput() goodput.Pricing {
	return goodput.Pricing{PerGPUHour: p.GPUHour, PerNodeHour: p.NodeHour, NodeGPUs: p.NodeGPUs}
}

func (c *Config) validatePricing(loc locator, add func(int, string, string, ...any)) {
	p := c.Pricing
	if p == nil {
		return
	}
	at := func(k string) int { return loc.line("pricing", k) }
	if p.Currency == "" {
		add(at("currency"), "pricing.currency", "is required (e.g. USD, EUR)")
	}
	switch {
	case p.GPUHour < 0:
		add(at("gpu_hour"), "pricing.gpu_hour", "must not be negative")
	case p.NodeHour < 0:
		add(at("node_hour"), "pricing.node_hour", "must not be negative")
	case p.GPUHour > 0 && p.NodeHour > 0:
		add(at("node_hour"), "pricing", "set gpu_hour or node_hour, not both")
	case p.GPUHour == 0 && p.NodeHour == 0:
		add(loc.line("pricing"), "pricing", "set gpu_hour (price per GPU-hour) or node_hour with node_gpus")
	case p.NodeHour > 0 && p.NodeGPUs <= 0:
		add(at("node_gpus"), "pricing.node_gpus", "is required with node_hour and must be positive")
	}
}
