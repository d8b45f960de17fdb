package accuracy

import (
	"math/rand/v2"
	"time"
)

// ScrapeNoise is what a real scrape loop adds to a fixed cadence: a scrape
// that fails now and then (a timeout, a connection reset, a restarting
// sidecar) and intervals that wander (a busy node, Prometheus' own
// spreading of scrape offsets).
type ScrapeNoise struct {
	// MissOneIn: on average one scrape in MissOneIn fails (0: none).
	MissOneIn int
	// Jitter moves each scrape by up to ±Jitter of the interval from its
	// nominal time, uniformly (0: none; below 0.5, so scrapes keep their
	// order).
	Jitter float64
}

// scrapeNoise draws the noise of one run from its own stream, seeded by
// the run's seed, so that a run is reproducible and the simulator's own
// streams are left as they are.
type scrapeNoise struct {
	ScrapeNoise
	rng *rand.Rand
}

func newScrapeNoise(n ScrapeNoise, seed uint64) *scrapeNoise {
	return &scrapeNoise{ScrapeNoise: n, rng: rand.New(rand.NewPCG(seed, 0x5c7a9e))}
}

// next returns the time of the scrape due at tick, and whether it fails.
func (n *scrapeNoise) next(tick, interval time.Duration) (time.Duration, bool) {
	if n.MissOneIn <= 0 && n.Jitter <= 0 {
		return tick, false
	}
	at := tick
	if n.Jitter > 0 {
		at += time.Duration((2*n.rng.Float64() - 1) * n.Jitter * float64(interval)).Round(time.Millisecond)
	}
	missed := n.MissOneIn > 0 && n.rng.IntN(n.MissOneIn) == 0
	return at, missed
}
