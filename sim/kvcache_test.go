package sim

import "testing"

func newReq(id uint64, prompt, prefixLen int, group uint64) *request {
	return &request{id: id, prompt: prompt, prefixLen: prefixLen, group: group, session: -1}
}

// checkKV verifies the block accounting: references match the requests
// holding blocks, and free plus used blocks make up the pool.
func checkKV(t *testing.T, c *kvCache, holders ...*request) {
	t.Helper()
	refs := map[int32]int32{}
	for _, r := range holders {
		for _, b := range r.blocks {
			refs[b]++
		}
	}
	used := 0
	for b := range c.blocks {
		if c.blocks[b].ref != refs[int32(b)] {
			t.Fatalf("block %d: ref %d, held %d times", b, c.blocks[b].ref, refs[int32(b)])
		}
		if c.blocks[b].ref > 0 {
			used++
		}
	}
	if used != c.used {
		t.Fatalf("used %d, counted %d", c.used, used)
	}
	if c.deficit == 0 && c.freeLen != c.capacity-c.used {
		t.Fatalf("free %d, want capacity %d - used %d", c.freeLen, c.capacity, c.used)
	}
	n := 0
	for b := c.freeHead; b != noBlock; b = c.blocks[b].next {
		n++
	}
	if n != c.freeLen {
		t.Fatalf("free list walks %d blocks, length says %d", n, c.freeLen)
	}
}

func TestKVPrefixHitsSkipSharedBlocks(t *testing.T) {
	c := newKVCache(100, 16, true)
	a := newReq(1, 100, 64, 7)
	if !c.admit(a, c.match(a), 100, 100, 0) {
		t.Fatal("first request not admitted")
	}
	a.computed = 100
	c.commit(a, 0, 100/16)
	b := newReq(2, 100, 64, 7)
	hits := c.match(b)
	if len(hits) != 4 {
		t.Fatalf("same group: %d prefix blocks hit, want the 4 full shared blocks", len(hits))
	}
	other := newReq(3, 100, 64, 8)
	if n := len(c.match(other)); n != 0 {
		t.Fatalf("other group hit %d blocks", n)
	}
	if !c.admit(b, hits, 100, 100, 0) {
		t.Fatal("second request not admitted")
	}
	if c.used != 7+3 {
		t.Fatalf("used %d blocks, want 7 for the first and 3 new for the second", c.used)
	}
	checkKV(t, c, a, b)
	c.release(a)
	c.release(b)
	checkKV(t, c)
	if c.used != 0 {
		t.Fatalf("%d blocks still used", c.used)
	}
}

func TestKVLastTokenIsNeverAHit(t *testing.T) {
	c := newKVCache(10, 16, true)
	a := newReq(1, 32, 32, 1)
	c.admit(a, nil, 32, 32, 0)
	a.computed = 32
	c.commit(a, 0, 2)
	b := newReq(2, 32, 32, 1)
	if n := len(c.match(b)); n != 1 {
		t.Fatalf("a fully cached 32-token prompt hit %d blocks, want 1: the last token must be computed", n)
	}
}

func TestKVEvictsLeastRecentlyFreedFirst(t *testing.T) {
	c := newKVCache(4, 16, true)
	a, b := newReq(1, 32, 0, 0), newReq(2, 32, 0, 0)
	for _, r := range []*request{a, b} {
		c.admit(r, nil, 32, 32, 0)
		r.computed = 32
		c.commit(r, 0, 2)
	}
	c.release(a) // a's blocks are now the oldest free ones
	c.release(b)
	x := newReq(3, 32, 0, 0)
	c.admit(x, nil, 32, 32, 0)
	a.blocks, b.blocks = nil, nil
	a.generated, b.generated = 1, 1 // match looks at prompt+generated-1 tokens
	if len(c.match(a)) != 0 {
		t.Fatal("the first freed request should have been evicted")
	}
	if len(c.match(b)) != 2 {
		t.Fatal("the last freed request should still be cached")
	}
	if c.evictions != 2 {
		t.Fatalf("%d evictions, want 2", c.evictions)
	}
	checkKV(t, c, x)
}

func TestKVWatermarkAndGrowth(t *testing.T) {
	c := newKVCache(10, 16, false)
	a := newReq(1, 16*8, 0, 0)
	if c.admit(a, nil, 16*8, 16*8, 3) {
		t.Fatal("admitted although only 2 blocks would stay free, reserve 3")
	}
	if !c.admit(a, nil, 16*7, 16*7, 3) {
		t.Fatal("not admitted with exactly the reserve left")
	}
	if !c.grow(a, 16*10) {
		t.Fatal("growth is not held to the watermark")
	}
	if c.grow(a, 16*10+1) {
		t.Fatal("grew past the pool")
	}
	c.release(a)
	if c.admit(a, nil, 16, 16*8, 3) {
		t.Fatal("admitted a first chunk although the whole prompt would not leave the reserve")
	}
	if !c.admit(a, nil, 16, 16*7, 3) || len(a.blocks) != 1 {
		t.Fatalf("admission with room for the whole prompt holds %d blocks, want the chunk's 1", len(a.blocks))
	}
	checkKV(t, c, a)
}

func TestKVShrinkBelowUse(t *testing.T) {
	c := newKVCache(10, 16, true)
	a := newReq(1, 16*6, 0, 0)
	c.admit(a, nil, 16*6, 16*6, 0)
	c.resize(4)
	if c.capacity != 4 || c.freeLen != 0 || c.deficit != 2 {
		t.Fatalf("capacity %d free %d deficit %d, want 4, 0, 2", c.capacity, c.freeLen, c.deficit)
	}
	if c.usage() != 1 {
		t.Fatalf("usage %v above the pool, want clamped to 1", c.usage())
	}
	c.release(a)
	if c.deficit != 0 || c.freeLen != 4 || c.used != 0 {
		t.Fatalf("after release: deficit %d free %d used %d", c.deficit, c.freeLen, c.used)
	}
	c.resize(12)
	checkKV(t, c)
	if c.freeLen != 12 {
		t.Fatalf("free %d after growing back, want 12", c.freeLen)
	}
}
