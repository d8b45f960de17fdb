package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sync/semaphore"
)

// DefaultBudget is the default for the bytes of bodies held at once over
// every target (--scrape.body-budget).
const DefaultBudget = 64 << 20

// ErrBudget is wrapped by Budget.Read when a body outgrows what the
// shared budget has left: other targets' bodies hold the rest.
var ErrBudget = errors.New("the body budget is held by other bodies")

const (
	// firstChunk is the least a read reserves before it knows more.
	firstChunk = 64 << 10
	// maxChunk is the largest piece a body of unknown length grows by.
	maxChunk = 1 << 20
)

// Budget bounds the bytes of response bodies held in memory at once, over
// every fetch that shares it. A read reserves its first piece (its
// Content-Length, or a size hint), waiting for room until its context
// ends when the piece is small (an eighth of the budget at most); past
// that, it grows only into room that is free at once, and fails with
// ErrBudget otherwise. So a read never waits while it holds budget, and
// a few oversized bodies cannot make the others wait for long.
type Budget struct {
	size int64
	sem  *semaphore.Weighted
}

// NewBudget returns a budget of size bytes.
func NewBudget(size int64) *Budget {
	return &Budget{size: size, sem: semaphore.NewWeighted(size)}
}

// Size is the budget's size in bytes.
func (b *Budget) Size() int64 { return b.size }

// Body is a body read under a budget. Its bytes count against the budget
// until Release; the caller releases it when done with Bytes (after the
// parse) and keeps no reference to them.
type Body struct {
	b      []byte
	held   int64
	budget *Budget
}

// Bytes is the body.
func (b *Body) Bytes() []byte { return b.b }

// Release returns the body's bytes to the budget and drops them. It may
// be called more than once.
func (b *Body) Release() {
	if b == nil || b.budget == nil {
		return
	}
	b.budget.sem.Release(b.held)
	b.b, b.held, b.budget = nil, 0, nil
}

// Read reads r, at most limit bytes, under the budget. length is the
// announced length (an HTTP Content-Length, -1 when unknown): one over limit
// is refused without reading, and a known length is read into one buffer
// of that size. hint is the expected size when the length is unknown (the
// last body's size; 0 for none). A body longer than limit is an
// error wrapping ErrBodyTooLarge, found after reading limit+1 bytes, never more.
//
// A body of unknown length is read in pieces (64 KiB growing to 1 MiB)
// and, when it took more than one, copied into one buffer of its exact
// size, so that reading n bytes holds at most 2n + 1 MiB of the budget
// for a moment and n after, and a refused body holds at most limit + 1 MiB
// until it is refused. The pieces, and a refused body's bytes, are
// returned to the budget before Read returns.
func (b *Budget) Read(ctx context.Context, r io.Reader, length, limit, hint int64) (*Body, error) {
	if length > limit {
		return nil, fmt.Errorf("%w: %d bytes announced, larger than the %d-byte cap", ErrBodyTooLarge, length, limit)
	}
	if length >= 0 {
		return b.readKnown(ctx, r, length)
	}
	first := min(max(hint+hint/4, firstChunk), limit+1)
	if first > b.size {
		first = b.size
	}
	if err := b.reserve(ctx, first); err != nil {
		return nil, err
	}
	var (
		chunks [][]byte
		held   = first
		total  int64
		cur    = make([]byte, first)
		fill   int
	)
	fail := func(err error) (*Body, error) {
		b.sem.Release(held)
		return nil, err
	}
	for {
		if fill == len(cur) {
			chunks = append(chunks, cur)
			if total > limit {
				return fail(fmt.Errorf("%w: larger than the %d-byte cap", ErrBodyTooLarge, limit))
			}
			next := min(max(int64(len(cur))*2, firstChunk), maxChunk, limit+1-total)
			if next <= 0 {
				next = 1 // one byte past the cap tells a longer body apart
			}
			if !b.sem.TryAcquire(next) {
				return fail(fmt.Errorf("%w: %d bytes read, %d more not free in the %d-byte budget", ErrBudget, total, next, b.size))
			}
			held += next
			cur, fill = make([]byte, next), 0
		}
		n, err := r.Read(cur[fill:])
		fill += n
		total += int64(n)
		if total > limit {
			return fail(fmt.Errorf("%w: larger than the %d-byte cap", ErrBodyTooLarge, limit))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(err)
		}
	}
	if len(chunks) == 0 {
		// One piece: keep it, returning what it has spare.
		if spare := int64(len(cur) - fill); spare > 0 && fill > 0 {
			b.sem.Release(spare)
			held -= spare
		}
		if fill == 0 {
			b.sem.Release(held)
			return &Body{b: nil}, nil
		}
		return &Body{b: cur[:fill:fill], held: held, budget: b}, nil
	}
	chunks = append(chunks, cur[:fill])
	if !b.sem.TryAcquire(total) {
		return fail(fmt.Errorf("%w: %d bytes read, not free again in the %d-byte budget to join them", ErrBudget, total, b.size))
	}
	out := make([]byte, 0, total)
	for _, c := range chunks {
		out = append(out, c...)
	}
	b.sem.Release(held) // the pieces are garbage now
	return &Body{b: out, held: total, budget: b}, nil
}

// reserve takes a read's first piece of the budget: a piece up to an
// eighth of the budget waits for room until ctx ends (the budget is shared
// first come, first served, so a small piece never waits behind a large
// one for long); a larger one is taken only if free at once.
func (b *Budget) reserve(ctx context.Context, n int64) error {
	if n <= b.size/8 {
		if err := b.sem.Acquire(ctx, n); err != nil {
			return fmt.Errorf("waiting for %d bytes of the %d-byte body budget: %w", n, b.size, err)
		}
		return nil
	}
	if !b.sem.TryAcquire(n) {
		return fmt.Errorf("%w: %d bytes not free in the %d-byte budget", ErrBudget, n, b.size)
	}
	return nil
}

// readKnown reads a body of announced length n into one buffer.
func (b *Budget) readKnown(ctx context.Context, r io.Reader, n int64) (*Body, error) {
	if n == 0 {
		return &Body{}, nil
	}
	if n > b.size {
		return nil, fmt.Errorf("%w: %d bytes announced, larger than the whole %d-byte body budget", ErrBudget, n, b.size)
	}
	if err := b.reserve(ctx, n); err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		b.sem.Release(n)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("body shorter than its announced %d bytes: %w", n, err)
		}
		return nil, err
	}
	return &Body{b: buf, held: n, budget: b}, nil
}
