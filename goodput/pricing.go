package goodput

import (
	"errors"
	"fmt"
)

// Pricing is what the GPUs a target holds cost, either per GPU-hour or as
// a share of a node's hourly price. Set exactly one of the two prices.
type Pricing struct {
	PerGPUHour  float64
	PerNodeHour float64
	// NodeGPUs is the number of GPUs the node price covers.
	NodeGPUs int
}

// HourlyCost is the cost of a target holding targetGPUs GPUs for an hour:
// PerGPUHour × targetGPUs, or PerNodeHour × targetGPUs / NodeGPUs. A target
// with no GPU attributed is an error, not a zero cost, so that the caller
// leaves the series out instead of claiming the target is free.
func HourlyCost(p Pricing, targetGPUs int) (float64, error) {
	if targetGPUs <= 0 {
		return 0, fmt.Errorf("target holds %d GPUs; its cost is unknown", targetGPUs)
	}
	switch {
	case p.PerGPUHour < 0 || p.PerNodeHour < 0:
		return 0, errors.New("prices must not be negative")
	case p.PerGPUHour > 0 && p.PerNodeHour > 0:
		return 0, errors.New("set a price per GPU-hour or per node-hour, not both")
	case p.PerGPUHour > 0:
		return p.PerGPUHour * float64(targetGPUs), nil
	case p.PerNodeHour > 0:
		if p.NodeGPUs <= 0 {
			return 0, fmt.Errorf("a node price needs the node's GPU count, got %d", p.NodeGPUs)
		}
		if targetGPUs > p.NodeGPUs {
			return 0, fmt.Errorf("target holds %d GPUs, more than the node's %d", targetGPUs, p.NodeGPUs)
		}
		return p.PerNodeHour * float64(targetGPUs) / float64(p.NodeGPUs), nil
	}
	return 0, errors.New("no price set")
}
