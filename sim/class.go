package sim

import (
	"cmp"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"
)

// classState generates one class's requests. Each class draws from its
// own seeded stream, so adding a class (a lever) leaves the others'
// requests exactly as they would have been.
type classState struct {
	idx      int
	spec     Class
	rng      *rand.Rand
	active   bool
	next     time.Duration   // next open-loop arrival
	sessions []time.Duration // next submission per closed-loop session
	pending  []time.Duration // bursty: the arrivals of bursts drawn, in order
	burstAt  time.Duration   // bursty: when the next burst begins
}

func newClassState(seed uint64, idx int, spec Class) *classState {
	h := fnv.New64a()
	h.Write([]byte(spec.Name))
	return &classState{idx: idx, spec: spec, rng: rand.New(rand.NewPCG(seed, h.Sum64())), next: never}
}

func (cs *classState) nextEvent() time.Duration {
	next := cs.next
	for _, s := range cs.sessions {
		next = min(next, s)
	}
	return next
}

func (cs *classState) scheduleNext(now time.Duration) {
	if !cs.active || cs.spec.Sessions > 0 {
		cs.next = never
		return
	}
	gap := 1 / cs.spec.Rate
	switch cs.spec.Arrival {
	case Poisson:
		gap = cs.rng.ExpFloat64() / cs.spec.Rate
	case Bursty:
		// Bursts begin as a Poisson process at Rate/BurstSize; each is a
		// geometric number of requests (mean BurstSize: 1 + the failures
		// before a success of probability 1/size) BurstGap apart, and
		// bursts may overlap, so that the mean rate is Rate.
		if len(cs.pending) == 0 && cs.burstAt < now {
			cs.burstAt = now + seconds(cs.rng.ExpFloat64()*cs.spec.BurstSize/cs.spec.Rate)
		}
		for len(cs.pending) == 0 || cs.burstAt <= cs.pending[0] {
			at := cs.burstAt
			for p := 1 / cs.spec.BurstSize; ; at += cs.spec.BurstGap {
				k, _ := slices.BinarySearch(cs.pending, at)
				cs.pending = slices.Insert(cs.pending, k, at)
				if cs.rng.Float64() < p {
					break
				}
			}
			cs.burstAt += seconds(cs.rng.ExpFloat64() * cs.spec.BurstSize / cs.spec.Rate)
		}
		cs.next = cs.pending[0]
		cs.pending = cs.pending[1:]
		return
	}
	cs.next = now + seconds(gap)
}

// reconfigure switches the class to spec (or off when spec is nil) at
// now; an arrival process that did not change keeps its schedule.
func (cs *classState) reconfigure(spec *Class, now time.Duration) {
	if spec == nil {
		cs.active, cs.next = false, never
		for i := range cs.sessions {
			cs.sessions[i] = never
		}
		return
	}
	old, was := cs.spec, cs.active
	cs.spec, cs.active = *spec, true
	sameProcess := was && old.Rate == spec.Rate && old.Arrival == spec.Arrival && old.Sessions == spec.Sessions
	if sameProcess {
		return
	}
	if spec.Sessions == 0 {
		cs.sessions = nil
		cs.scheduleNext(now)
		return
	}
	cs.next = never
	if !was {
		cs.sessions = cs.sessions[:0]
	}
	for len(cs.sessions) < spec.Sessions {
		cs.sessions = append(cs.sessions, now)
	}
	cs.sessions = cs.sessions[:spec.Sessions]
}

// sessionDone schedules the session's next request after its think time.
func (cs *classState) sessionDone(i int, now time.Duration) {
	if cs.active && i < len(cs.sessions) {
		cs.sessions[i] = now + cs.spec.ThinkTime
	}
}

// arrive creates one request of the class. It always draws the same
// random values in the same order, so that a lever that changes one
// property leaves the others as they were.
func (e *Engine) arrive(cs *classState, session int) {
	spec, rng := &cs.spec, cs.rng
	body := spec.Prompt.Sample(rng)
	natural := spec.Output.Sample(rng)
	group := uint64(rng.IntN(max(spec.PrefixGroups, 1)))
	maxLen := e.cfg.Model.MaxModelLen
	r := &request{
		id:      e.nextID,
		class:   cs.idx,
		lever:   e.lever,
		session: session,
		arrival: e.now,
		prompt:  min(spec.PrefixLen+body, maxLen-1),
	}
	e.nextID++
	r.prefixLen = min(spec.PrefixLen, r.prompt)
	r.group = uint64(cs.idx)<<32 | group
	if spec.RandomPrefix {
		e.randomID++
		r.group = 1<<42 | e.randomID
	}
	r.maxTokens = min(spec.MaxTokens, maxLen-r.prompt)
	r.target = natural
	if natural >= r.maxTokens {
		r.target, r.length = r.maxTokens, true
	}
	r.deadline = never
	if limit := cmp.Or(spec.ClientTimeout, e.cfg.Workload.ClientTimeout); limit > 0 {
		r.deadline = e.now + limit
	}
	if c := e.cfg.Workload.MaxInFlight; c > 0 && session < 0 && len(e.running)+e.waiting.len() >= c {
		return // the client holds it back; its random draws are made all the same
	}
	e.c.Arrived++
	e.waiting.pushBack(r)
}
