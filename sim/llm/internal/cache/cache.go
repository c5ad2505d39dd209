// Package cache provides the bounded memo the simulated server keeps of
// work that depends only on text it is sent again and again: the token ids
// of a chat turn, the facts and links of a tool result, the parsed
// arguments of a tool call.
package cache

import "sync"

// entryOverhead is what an entry costs beside its own size: its share of a
// Go map's buckets (key and value headers, tophash, load factor) and the
// slice or string headers it points through, rounded up.
const entryOverhead = 96

// Cache is a cache of values by comparable key, bounded by the summed cost
// of its entries; a cost is the caller's estimate of an entry's bytes, to
// which the cache adds entryOverhead.
//
// It keeps two generations, which approximate LRU without a list: new entries go to the young generation, and when the
// young generation's cost would pass half the bound, the old generation is
// dropped and the young one becomes old. A hit in the old generation moves
// the entry to the young one, so an entry that is used at least once per
// generation (a tool result shared by many conversations, the turns of a
// conversation that comes back before half the bound was spent on other
// entries) stays however many one-off entries pass through. "Start over
// when full", its predecessor, also dropped the hot entries at every
// reset. The summed cost never exceeds the bound; an entry costing more
// than half of it is not kept.
//
// A Cache is safe for concurrent use. A nil *Cache holds nothing.
type Cache[K comparable, V any] struct {
	half int64 // bound of each generation

	mu           sync.Mutex
	young, old   map[K]entry[V]
	youngC, oldC int64 // summed costs
	hits, misses uint64
	rotations    uint64
}

type entry[V any] struct {
	v    V
	cost int64
}

// New returns a cache whose entries cost at most maxCost in all.
func New[K comparable, V any](maxCost int64) *Cache[K, V] {
	return &Cache[K, V]{half: maxCost / 2, young: make(map[K]entry[V])}
}

// Get returns the value cached for k; ok is false when there is none.
func (c *Cache[K, V]) Get(k K) (v V, ok bool) {
	if c == nil {
		return v, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.young[k]; ok {
		c.hits++
		return e.v, true
	}
	e, ok := c.old[k]
	if !ok {
		c.misses++
		return v, false
	}
	c.hits++
	delete(c.old, k)
	c.oldC -= e.cost
	c.insert(k, e)
	return e.v, true
}

// Add caches v for k at cost (plus the per-entry overhead), replacing any
// value k had. Values are shared with every later Get and must not be
// modified.
func (c *Cache[K, V]) Add(k K, v V, cost int) {
	if c == nil {
		return
	}
	e := entry[V]{v: v, cost: int64(cost) + entryOverhead}
	if e.cost > c.half {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.young[k]; ok {
		c.youngC -= old.cost
	} else if old, ok := c.old[k]; ok {
		delete(c.old, k)
		c.oldC -= old.cost
	}
	c.insert(k, e)
}

// insert puts e in the young generation, first retiring it if e would
// take it over half the bound. c.mu is held.
func (c *Cache[K, V]) insert(k K, e entry[V]) {
	if c.youngC+e.cost > c.half {
		c.old, c.oldC = c.young, c.youngC
		c.young, c.youngC = make(map[K]entry[V], len(c.old)), 0
		c.rotations++
	}
	c.young[k] = e
	c.youngC += e.cost
}

// Stats are a cache's counters.
type Stats struct {
	Entries   int    // entries held
	Cost      int64  // their summed cost, overhead included
	Hits      uint64 // Gets that found a value
	Misses    uint64 // Gets that found none
	Rotations uint64 // times the old generation was dropped
}

// Stats returns the cache's counters; a nil cache's are zero.
func (c *Cache[K, V]) Stats() Stats {
	if c == nil {
		return Stats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Entries: len(c.young) + len(c.old), Cost: c.youngC + c.oldC, Hits: c.hits, Misses: c.misses, Rotations: c.rotations}
}
