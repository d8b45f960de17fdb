package fetch

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// countingReader serves n bytes of pattern (n < 0: endless) and counts
// what was read.
type countingReader struct {
	n, read int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n >= 0 && c.read >= c.n {
		return 0, io.EOF
	}
	k := int64(len(p))
	if c.n >= 0 && k > c.n-c.read {
		k = c.n - c.read
	}
	for i := range k {
		p[i] = byte('a' + (c.read+i)%26)
	}
	c.read += k
	return int(k), nil
}

func pattern(n int64) []byte {
	var c countingReader
	c.n = n
	b, _ := io.ReadAll(&c)
	return b
}

// free says whether the whole budget is free again.
func free(b *Budget) bool {
	if !b.sem.TryAcquire(b.size) {
		return false
	}
	b.sem.Release(b.size)
	return true
}

func TestBudgetReadsWholeBodies(t *testing.T) {
	ctx := context.Background()
	bu := NewBudget(16 << 20)
	for _, n := range []int64{0, 1, 100, firstChunk, firstChunk + 1, 3<<20 + 7} {
		for _, known := range []bool{false, true} {
			length := int64(-1)
			if known {
				length = n
			}
			body, err := bu.Read(ctx, &countingReader{n: n}, length, 4<<20, 0)
			if err != nil {
				t.Fatalf("%d bytes (known %v): %v", n, known, err)
			}
			if !bytes.Equal(body.Bytes(), pattern(n)) {
				t.Errorf("%d bytes (known %v): body differs (%d bytes read)", n, known, len(body.Bytes()))
			}
			// What it holds is its own size, not its pieces'.
			if body.held != n || int64(cap(body.Bytes())) != n {
				t.Errorf("%d bytes (known %v): holds %d of the budget, capacity %d", n, known, body.held, cap(body.Bytes()))
			}
			body.Release()
			body.Release()
			if !free(bu) {
				t.Fatalf("%d bytes (known %v): the budget is not free after Release", n, known)
			}
		}
	}
}

// A body over the cap: refused unread when its length is announced,
// after limit+1 bytes otherwise; nothing of the budget kept.
func TestBudgetRefusesOversizedBodies(t *testing.T) {
	ctx := context.Background()
	bu := NewBudget(16 << 20)
	r := &countingReader{n: 100 << 20}
	if _, err := bu.Read(ctx, r, 100<<20, 2<<20, 0); !errors.Is(err, ErrBodyTooLarge) || r.read != 0 {
		t.Errorf("announced 100 MiB: err %v after reading %d bytes, want ErrBodyTooLarge unread", err, r.read)
	}
	for _, n := range []int64{2<<20 + 1, 100 << 20, -1} {
		r := &countingReader{n: n}
		if _, err := bu.Read(ctx, r, -1, 2<<20, 0); !errors.Is(err, ErrBodyTooLarge) || r.read != 2<<20+1 {
			t.Errorf("%d bytes, unannounced: err %v after reading %d bytes, want ErrBodyTooLarge after %d", n, err, r.read, 2<<20+1)
		}
		if !free(bu) {
			t.Fatal("a refused body keeps budget")
		}
	}
	body, err := bu.Read(ctx, &countingReader{n: 2 << 20}, -1, 2<<20, 0)
	if err != nil || len(body.Bytes()) != 2<<20 {
		t.Fatalf("a body of exactly the cap: %v", err)
	}
	body.Release()
	if _, err := bu.Read(ctx, strings.NewReader("abc"), 10, 2<<20, 0); err == nil {
		t.Error("a body shorter than announced was accepted")
	}
	if !free(bu) {
		t.Fatal("a short body keeps budget")
	}
}

// Reading n bytes of unknown length needs 2n + up to 1 MiB for a moment
// (the pieces and the joined copy); n bytes of announced length need n.
func TestBudgetBound(t *testing.T) {
	ctx := context.Background()
	const n = 3 << 20
	for _, c := range []struct {
		size   int64
		length int64
		ok     bool
	}{
		{2*n + 1<<20, -1, true},
		{n + n/2, -1, false},
		{n, n, true},
		{n - 1, n, false},
	} {
		bu := NewBudget(c.size)
		body, err := bu.Read(ctx, &countingReader{n: n}, c.length, 8<<20, 0)
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrBudget)) {
			t.Errorf("budget %d, length %d: err %v, want ok %v (or ErrBudget)", c.size, c.length, err, c.ok)
		}
		body.Release()
		if !free(bu) {
			t.Errorf("budget %d: not free after the read", c.size)
		}
	}
}

// With the budget held by one body, another that needs more fails at
// once (it does not wait while holding budget); a small body waits for
// room until its deadline, and gets it when the holder releases.
func TestBudgetShared(t *testing.T) {
	bu := NewBudget(4 << 20)
	ctx := context.Background()
	big, err := bu.Read(ctx, &countingReader{n: 3 << 20}, 3<<20, 8<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := bu.Read(ctx, &countingReader{n: 2 << 20}, -1, 8<<20, 0); !errors.Is(err, ErrBudget) {
		t.Errorf("a second large body: %v, want ErrBudget", err)
	}
	if _, err := bu.Read(ctx, &countingReader{n: 2 << 20}, 2<<20, 8<<20, 0); !errors.Is(err, ErrBudget) {
		t.Errorf("a second large announced body: %v, want ErrBudget", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusals took %v: they must not wait", d)
	}
	small, err := bu.Read(ctx, &countingReader{n: 10 << 10}, -1, 8<<20, 0)
	if err != nil {
		t.Fatalf("a small body beside the large one: %v", err)
	}
	small.Release()

	all, err := bu.Read(ctx, &countingReader{n: 1 << 20}, 1<<20, 8<<20, 0) // the rest
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := bu.Read(short, &countingReader{n: 10}, -1, 8<<20, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a small body with the budget full: %v, want to wait until its deadline", err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		big.Release()
	}()
	if b, err := bu.Read(ctx, &countingReader{n: 10}, -1, 8<<20, 0); err != nil || len(b.Bytes()) != 10 {
		t.Errorf("a small body after the large one is released: %v", err)
	} else {
		b.Release()
	}
	all.Release()
	if !free(bu) {
		t.Error("budget not free at the end")
	}
}
