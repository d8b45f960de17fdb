package goodput

import (
	"errors"
	"fmt"
	"math"
)

// Goodput is the rate of requests (or tokens) that meet an objective:
// rate × attainment. 100 req/s at 0.99 is 99 req/s of goodput.
func Goodput(rate, attainment float64) float64 { return rate * attainment }

// CostPerMillionGoodTokens is what a million good tokens cost:
// hourlyCost / 3600 / goodTokensPerSecond × 1e6, in the currency of
// hourlyCost. ok is false when no good token was produced, where the cost
// is unbounded rather than a number.
func CostPerMillionGoodTokens(hourlyCost, goodTokensPerSecond float64) (cost float64, ok bool) {
	if !(goodTokensPerSecond > 0) || hourlyCost < 0 || math.IsNaN(hourlyCost) {
		return 0, false
	}
	return hourlyCost / 3600 / goodTokensPerSecond * 1e6, true
}

// ReplicaSlack is the share of one replica's goodput that Replicas lets
// go unserved rather than add a replica: goodput at the knee is itself a
// measurement (a sweep step, a window of traffic), good to about a percent.
const ReplicaSlack = 0.01

// Replicas is how many replicas serve peak load when each sustains
// perReplica at its knee: peak / perReplica rounded up, unless the part
// over a whole number is within ReplicaSlack of a replica. The field's
// example, 20,000 tok/s over 3,330 tok/s per replica = 6.006, is 6; 6.05
// would be 7. Both in the same unit (tok/s or req/s).
func Replicas(peak, perReplica float64) (int, error) {
	if !(perReplica > 0) || math.IsInf(perReplica, 1) {
		return 0, fmt.Errorf("goodput per replica must be positive, got %v", perReplica)
	}
	if !(peak >= 0) || math.IsInf(peak, 1) {
		return 0, fmt.Errorf("peak load must be a non-negative number, got %v", peak)
	}
	n := int(math.Ceil(peak/perReplica - ReplicaSlack))
	if peak > 0 && n < 1 {
		n = 1 // any load needs a replica
	}
	return n, nil
}

// SweepStep is one step of a load sweep: an offered rate and what the
// server did under it.
type SweepStep struct {
	Rate       float64 // offered load, req/s
	TTFTP99    float64 // seconds
	Throughput float64 // generation tokens/s
	Goodput    float64 // generation tokens/s of requests meeting the SLO
}

// Knee returns the step with the highest goodput: past it, more load buys
// less good work, because the tail crosses the SLO for ever more requests.
// Ties go to the lower rate, which reaches the same goodput with less load.
func Knee(steps []SweepStep) (SweepStep, error) {
	if len(steps) == 0 {
		return SweepStep{}, errors.New("empty sweep")
	}
	best := steps[0]
	for _, s := range steps[1:] {
		if s.Goodput > best.Goodput || (s.Goodput == best.Goodput && s.Rate < best.Rate) {
			best = s
		}
	}
	return best, nil
}
