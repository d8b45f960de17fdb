package sim

// kvCache is a paged KV cache: a fixed number of blocks of blockSize
// tokens, reference counted, with vLLM's prefix cache on top. A block that
// is full of computed tokens gets a key (the hash of its content, here the
// prefix group and block index, or the request and block index for
// private content); unreferenced blocks stay in an LRU free list with
// their key, so a later request with the same content can revive them
// instead of recomputing, until allocation evicts them from the head.
type kvCache struct {
	blockSize int
	caching   bool
	blocks    []kvBlock
	capacity  int
	used      int
	// deficit counts in-use blocks to drop once freed after the cache
	// shrank below its use.
	deficit int
	spare   []int32

	freeHead, freeTail int32
	freeLen            int
	byKey              map[uint64]int32
	evictions          int64
}

type kvBlock struct {
	ref        int32
	prev, next int32
	key        uint64
	cached     bool
}

const noBlock = -1

func newKVCache(numBlocks, blockSize int, caching bool) *kvCache {
	c := &kvCache{blockSize: blockSize, caching: caching, freeHead: noBlock, freeTail: noBlock, byKey: map[uint64]int32{}}
	c.resize(numBlocks)
	return c
}

// resize changes the block count. Shrinking drops free blocks first
// (oldest first) and the rest as they are freed.
func (c *kvCache) resize(n int) {
	for c.capacity < n {
		c.capacity++
		if c.deficit > 0 {
			c.deficit--
			continue
		}
		var b int32
		if k := len(c.spare); k > 0 {
			b, c.spare = c.spare[k-1], c.spare[:k-1]
		} else {
			b = int32(len(c.blocks))
			c.blocks = append(c.blocks, kvBlock{})
		}
		c.pushFree(b)
	}
	for c.capacity > n {
		c.capacity--
		if c.freeLen == 0 {
			c.deficit++
			continue
		}
		b := c.freeHead
		c.removeFree(b)
		c.uncache(b)
		c.spare = append(c.spare, b)
	}
}

func (c *kvCache) usage() float64 {
	if c.capacity == 0 {
		return 1
	}
	return min(1, float64(c.used)/float64(c.capacity))
}

func (c *kvCache) blocksFor(tokens int) int { return (tokens + c.blockSize - 1) / c.blockSize }

// match returns the cached blocks that hold the request's leading tokens,
// leaving at least one token to compute (the last one produces logits).
func (c *kvCache) match(r *request) []int32 {
	if !c.caching {
		return nil
	}
	var hits []int32
	limit := (r.numTokens() - 1) / c.blockSize
	for i := 0; i < limit; i++ {
		b, ok := c.byKey[r.blockKey(i, c.blockSize)]
		if !ok {
			break
		}
		hits = append(hits, b)
	}
	return hits
}

// admit gives a waiting request the matched blocks and new ones up to
// tokens, if the cache could also hold it up to full tokens and still
// have reserve blocks free; all or nothing.
func (c *kvCache) admit(r *request, matched []int32, tokens, full, reserve int) bool {
	revive := 0
	for _, b := range matched {
		if c.blocks[b].ref == 0 {
			revive++
		}
	}
	if c.freeLen-revive-(c.blocksFor(full)-len(matched)) < reserve {
		return false
	}
	need := c.blocksFor(tokens) - len(matched)
	for _, b := range matched {
		if c.blocks[b].ref == 0 {
			c.removeFree(b)
			c.used++
		}
		c.blocks[b].ref++
		r.blocks = append(r.blocks, b)
	}
	c.take(r, need)
	return true
}

// grow gives a running request blocks for tokens; false when the cache is
// out of free blocks.
func (c *kvCache) grow(r *request, tokens int) bool {
	need := c.blocksFor(tokens) - len(r.blocks)
	if need <= 0 {
		return true
	}
	if c.freeLen < need {
		return false
	}
	c.take(r, need)
	return true
}

func (c *kvCache) take(r *request, n int) {
	for range n {
		b := c.freeHead
		c.removeFree(b)
		c.uncache(b)
		c.blocks[b].ref = 1
		c.used++
		r.blocks = append(r.blocks, b)
	}
}

// commit gives the request's full blocks from index from on their keys.
func (c *kvCache) commit(r *request, from, to int) {
	if !c.caching {
		return
	}
	for i := from; i < to; i++ {
		key := r.blockKey(i, c.blockSize)
		if _, dup := c.byKey[key]; dup {
			continue // computed twice concurrently; the first copy serves hits
		}
		b := r.blocks[i]
		c.byKey[key] = b
		c.blocks[b].key, c.blocks[b].cached = key, true
	}
}

// release frees the request's blocks, last block first, so that a
// sequence's tail is evicted before its head.
func (c *kvCache) release(r *request) {
	for i := len(r.blocks) - 1; i >= 0; i-- {
		b := r.blocks[i]
		c.blocks[b].ref--
		if c.blocks[b].ref > 0 {
			continue
		}
		c.used--
		if c.deficit > 0 {
			c.deficit--
			c.uncache(b)
			c.spare = append(c.spare, b)
			continue
		}
		c.pushFree(b)
	}
	r.blocks = r.blocks[:0]
}

func (c *kvCache) uncache(b int32) {
	blk := &c.blocks[b]
	if !blk.cached {
		return
	}
	if c.byKey[blk.key] == b {
		delete(c.byKey, blk.key)
		c.evictions++
	}
	blk.cached = false
}

func (c *kvCache) pushFree(b int32) {
	blk := &c.blocks[b]
	blk.prev, blk.next = c.freeTail, noBlock
	if c.freeTail != noBlock {
		c.blocks[c.freeTail].next = b
	} else {
		c.freeHead = b
	}
	c.freeTail = b
	c.freeLen++
}

func (c *kvCache) removeFree(b int32) {
	blk := &c.blocks[b]
	if blk.prev != noBlock {
		c.blocks[blk.prev].next = blk.next
	} else {
		c.freeHead = blk.next
	}
	if blk.next != noBlock {
		c.blocks[blk.next].prev = blk.prev
	} else {
		c.freeTail = blk.prev
	}
	blk.prev, blk.next = noBlock, noBlock
	c.freeLen--
}
