package sim

import "time"

type reqState uint8

const (
	stateWaiting reqState = iota
	stateRunning
	stateDone
)

// request is the engine's view of one request in flight.
type request struct {
	id      uint64
	class   int
	lever   Lever
	session int // closed-loop session index, or -1
	state   reqState

	prompt    int
	target    int  // tokens to generate before finishing
	maxTokens int  // effective max_tokens
	length    bool // finishes by reaching max_tokens
	group     uint64
	prefixLen int

	generated  int
	computed   int // tokens whose KV is in the cache
	highWater  int // most tokens ever computed, to count recomputation
	cachedUpTo int // blocks already given a prefix-cache key
	blocks     []int32

	admitted    bool
	cachedToks  int // prefix-cache hit tokens at first admission
	computedPre int // prompt tokens computed at first admission (not hits)
	preemptions int
	recomputed  int

	arrival    time.Duration
	deadline   time.Duration // the client disconnects then
	firstSched time.Duration
	firstToken time.Duration
	lastToken  time.Duration
	itls       []time.Duration
}

func (r *request) numTokens() int { return r.prompt + r.generated }

// blockKey is the content hash of block i: shared prefix blocks hash by
// group and index so that requests of a group hit each other's blocks,
// every other block is private to the request.
func (r *request) blockKey(i, blockSize int) uint64 {
	if (i+1)*blockSize <= r.prefixLen {
		return 1<<63 | r.group<<20 | uint64(i)
	}
	return r.id<<20 | uint64(i)
}
