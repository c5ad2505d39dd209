package policy

import "sync"

// memo is a bounded cache of a pure function's results. A conversation sends
// every earlier message again on each turn, and re-parsing all of it (tool
// results with the fact grammar's regular expressions, search results for
// their links, tool-call arguments with encoding/json) was most of the
// policy's cost; a cached answer is the same answer, so the cache never
// changes what the policy does. When full it starts over. A nil *memo
// computes every time. It is safe for concurrent use.
type memo[K comparable, V any] struct {
	max int
	mu  sync.Mutex
	m   map[K]V
}

func newMemo[K comparable, V any](max int) *memo[K, V] {
	return &memo[K, V]{max: max, m: make(map[K]V)}
}

// get returns f(k), from the cache when it holds k. Values are shared
// between callers and must not be modified.
func (c *memo[K, V]) get(k K, f func(K) V) V {
	if c == nil {
		return f(k)
	}
	c.mu.Lock()
	v, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = f(k)
	c.mu.Lock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[k] = v
	c.mu.Unlock()
	return v
}
