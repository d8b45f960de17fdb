package accuracy

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/goodput-exporter/goodput-exporter/sim"
)

// Delivery describes how request spans travel from the engine to the
// daemon when they do not arrive once, in order and on time: what OTLP
// exporters, collectors and samplers do. Every fault is drawn from Seed,
// so a run is reproduced exactly.
type Delivery struct {
	Seed uint64
	// Duplicate is the share of spans that arrive twice: the copy 0 to
	// MaxDelay intervals after the first, as a retried export does.
	Duplicate float64
	// Resend is the share of exports sent again whole in the next
	// interval (the sender timed out waiting for the answer).
	Resend float64
	// Bad is the share of intervals in which the path is troubled (a
	// collector backed up or restarting): there a span is Late with this
	// probability, 1 to MaxDelay intervals late, and Lost with this one.
	Bad, Late, Lost float64
	// Sampled is the share of spans never sent anywhere (head sampling
	// without a trace state saying so, a filter on the way).
	Sampled  float64
	MaxDelay int
	// Skew shifts each export's span timestamps by up to ± Skew, as an
	// engine clock off by that much would; the daemon judges a request by
	// its latencies, not its timestamps.
	Skew time.Duration
}

// DefaultDelivery is the fault mix of the accuracy tests.
var DefaultDelivery = Delivery{
	Seed: 20, Duplicate: 0.1, Resend: 0.05, Bad: 0.1, Late: 0.3, Lost: 0.05,
	Sampled: 0.002, MaxDelay: 4, Skew: 2 * time.Second,
}

// courier holds spans on their way: the deliveries due at each interval,
// and, per request, the interval its span first arrives in (-1: never).
type courier struct {
	d       Delivery
	rng     *rand.Rand
	due     map[int][]sim.Record // interval -> records, copies included
	resend  map[int][][]sim.Record
	first   map[uint64]int
	aborted int // requests that ended without a first token
}

func newCourier(d Delivery) *courier {
	return &courier{d: d, rng: rand.New(rand.NewPCG(d.Seed, d.Seed^0x9e3779b97f4a7c15)), due: map[int][]sim.Record{}, resend: map[int][][]sim.Record{}, first: map[uint64]int{}}
}

// take schedules the spans of the requests that finished in interval i.
func (c *courier) take(i int, recs []sim.Record) {
	bad := c.rng.Float64() < c.d.Bad
	for _, r := range recs {
		if !r.HasFirstToken {
			c.aborted++
		}
		at := i
		switch {
		case c.rng.Float64() < c.d.Sampled:
			at = -1
		case bad && c.rng.Float64() < c.d.Lost:
			at = -1
		case bad && c.rng.Float64() < c.d.Late:
			at = i + 1 + c.rng.IntN(c.d.MaxDelay)
		}
		c.first[r.ID] = at
		if at < 0 {
			continue
		}
		c.due[at] = append(c.due[at], r)
		if c.rng.Float64() < c.d.Duplicate {
			again := at + c.rng.IntN(c.d.MaxDelay+1)
			c.due[again] = append(c.due[again], r)
		}
	}
}

// deliver returns the exports that arrive in interval i: its spans in a
// random order, cut into one to three exports, with the exports of the
// last interval that are sent again.
func (c *courier) deliver(i int) [][]sim.Record {
	recs := c.due[i]
	delete(c.due, i)
	c.rng.Shuffle(len(recs), func(a, b int) { recs[a], recs[b] = recs[b], recs[a] })
	var out [][]sim.Record
	for len(recs) > 0 {
		n := min(len(recs), 1+c.rng.IntN(len(recs)))
		out = append(out, recs[:n])
		recs = recs[n:]
	}
	for _, ex := range out {
		if c.rng.Float64() < c.d.Resend {
			c.resend[i+1] = append(c.resend[i+1], slices.Clone(ex))
		}
	}
	out = append(out, c.resend[i]...)
	delete(c.resend, i)
	c.rng.Shuffle(len(out), func(a, b int) { out[a], out[b] = out[b], out[a] })
	return out
}

// skew is the clock offset of one export.
func (c *courier) skew() time.Duration {
	if c.d.Skew <= 0 {
		return 0
	}
	return time.Duration(c.rng.Int64N(int64(2*c.d.Skew)+1)) - c.d.Skew
}
