package otlp

import (
	"encoding/binary"
	"hash/maphash"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Defaults of the duplicate filter. OTLP delivery is at least once: an
// SDK's exporter retries a timed-out export for up to a minute, the
// OpenTelemetry Collector's exporter helper for up to five (its
// retry_on_failure.max_elapsed_time), so a copy arrives within minutes of
// the first. 2^19 spans are ten minutes at 870 request spans a second, more
// than the engines of one node finish.
const (
	DefaultDedupWindow = 10 * time.Minute
	DefaultDedupSpans  = 1 << 19
)

// dedup remembers the spans read recently, by a 64-bit hash of their
// (trace id, span id), in two generations: a span is looked up in both and
// added to the newer; the older is emptied and becomes the newer when the
// newer is window old or holds half the spans allowed. So a copy is
// recognised when it arrives within window of the first, or within the
// next spans/2 distinct spans, whichever ends first.
//
// Memory: each generation is an open-addressed table of uint64 hashes at
// most half full, its size the power of two at or above spans: 16 bytes a
// span allowed, allocated at the first span and never grown (8 MiB at the
// default 2^19). Emptying a generation clears it in place.
//
// Two distinct spans share a hash with probability 2^-64 per pair: with
// spans remembered, a new span is taken for a copy with probability
// spans × 2^-64, 3 × 10^-14 at the default.
type dedup struct {
	mu       sync.Mutex
	seed     maphash.Seed
	window   time.Duration
	half     int
	cur, old table
	since    time.Time // when cur became the newer generation
	now      func() time.Time
}

// table is a set of non-zero uint64, open addressing, linear probing.
type table struct {
	slots []uint64 // 0: empty
	n     int
}

func (t *table) has(h uint64) bool {
	if t.slots == nil {
		return false
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch t.slots[i] {
		case h:
			return true
		case 0:
			return false
		}
	}
}

// add inserts h, known to be absent; the table is less than half full.
func (t *table) add(h uint64) {
	mask := uint64(len(t.slots) - 1)
	i := h & mask
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = h
	t.n++
}

func newDedup(window time.Duration, spans int) *dedup {
	if window <= 0 {
		window = DefaultDedupWindow
	}
	if spans <= 0 {
		spans = DefaultDedupSpans
	}
	return &dedup{seed: maphash.MakeSeed(), window: window, half: max(1, spans/2), now: time.Now}
}

func (d *dedup) hash(tid pcommon.TraceID, sid pcommon.SpanID) uint64 {
	var key [24]byte
	copy(key[:16], tid[:])
	copy(key[16:], sid[:])
	return max(1, maphash.Bytes(d.seed, key[:])) // 0 marks an empty slot
}

// seen reports whether the span was read before (within the window), and
// remembers it if not.
func (d *dedup) seen(tid pcommon.TraceID, sid pcommon.SpanID) bool {
	h := d.hash(tid, sid)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur.has(h) || d.old.has(h) {
		return true
	}
	now := d.now()
	switch {
	case d.cur.slots == nil:
		// A table of at least twice half slots: never over half full.
		size := 1
		for size < 2*d.half {
			size *= 2
		}
		d.cur.slots, d.since = make([]uint64, size), now
	case d.cur.n >= d.half || now.Sub(d.since) >= d.window:
		if d.old.slots == nil {
			d.old.slots = make([]uint64, len(d.cur.slots))
		} else {
			clear(d.old.slots)
		}
		d.old.n = 0
		d.old, d.cur, d.since = d.cur, d.old, now
	}
	d.cur.add(h)
	return false
}

// size is the number of spans remembered.
func (d *dedup) size() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cur.n + d.old.n
}

// validIDs reports whether a span has the ids OTLP requires: a trace id
// and a span id that are not all zeroes.
func validIDs(tid pcommon.TraceID, sid pcommon.SpanID) bool {
	return !tid.IsEmpty() && binary.BigEndian.Uint64(sid[:]) != 0
}
