package exporter

import "sync"

// DefaultMaxModels is the default of --collect.max-models.
const DefaultMaxModels = 2000

// modelPool caps the models read over all targets (Options.MaxModels).
// Each running target may always read its share, max/MaxTargets models
// (10 at the defaults: max-targets 200 targets at their share fill the
// pool); past its share, a target reads a new model only while the
// targets together hold fewer than max, each counted at least at its
// share. So 30 targets serving 10,000 models each among 200 read 10 each,
// where model_limit alone let them read 100 each (3,000 models, each
// with its series and goodput state), while a few targets of many models
// in a small fleet still read up to their model_limit.
//
// A model already read is never taken away when the pool fills (its
// counters would stop and start again); only new ones are refused, as
// past model_limit: left out, counted with reason model_limit.
type modelPool struct {
	mu    sync.Mutex
	max   int            // 0: no cap
	share int            // what each target may always read
	held  map[string]int // by target: its models, or its reservation during a scrape, at least share
	total int            // the sum of held
}

// set sets a target's holding, keeping total; mu is held.
func (p *modelPool) set(name string, n int) {
	p.total += n - p.held[name]
	p.held[name] = n
}

func newModelPool(most, maxTargets int) *modelPool {
	p := &modelPool{max: most, held: map[string]int{}}
	if most > 0 {
		p.share = most
		if maxTargets > 0 {
			p.share = max(1, most/maxTargets)
		}
	}
	return p
}

// reserve returns how many models the target may hold in its next body,
// at most limit (its model_limit), and holds that many for it until
// settle: targets scraped at once cannot take the same room.
func (p *modelPool) reserve(name string, limit int) int {
	if p == nil || p.max <= 0 || limit <= 0 {
		return limit
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.held[name]; !ok {
		return min(limit, p.share) // stopped, or not started by apply (tests)
	}
	others := p.total - p.held[name]
	allow := min(limit, max(p.share, p.max-others))
	p.set(name, max(p.held[name], allow, p.share))
	return allow
}

// settle records the models the target holds after a body.
func (p *modelPool) settle(name string, models int) {
	if p == nil || p.max <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.held[name]; ok { // not a target that left during its scrape
		p.set(name, max(models, p.share))
	}
}

// keep makes the pool count exactly the named targets: a new one at its
// share, one that left not at all.
func (p *modelPool) keep(names map[string]bool) {
	if p == nil || p.max <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for n, h := range p.held {
		if !names[n] {
			p.total -= h
			delete(p.held, n)
		}
	}
	for n := range names {
		if _, ok := p.held[n]; !ok {
			p.set(n, p.share)
		}
	}
}
