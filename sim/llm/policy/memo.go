package policy

import "github.com/mgrpo/mgrpo/sim/llm/internal/cache"

// memo is a bounded cache of a pure function's results. A conversation sends
// every earlier message again on each turn, and re-parsing all of it (tool
// results with the fact grammar's regular expressions, search results for
// their links, tool-call arguments with encoding/json) was most of the
// policy's cost; a cached answer is the same answer, so the cache never
// changes what the policy does. It holds entries of at most a bound of
// bytes, as estimated by its cost function (see cache.Cache for the
// eviction policy). A nil *memo computes every time. It is safe for
// concurrent use.
type memo[K comparable, V any] struct {
	c    *cache.Cache[K, V]
	cost func(K, V) int // an entry's bytes beside the cache's overhead
}

func newMemo[K comparable, V any](maxBytes int64, cost func(K, V) int) *memo[K, V] {
	return &memo[K, V]{c: cache.New[K, V](maxBytes), cost: cost}
}

// get returns f(k), from the cache when it holds k. Values are shared
// between callers and must not be modified.
func (m *memo[K, V]) get(k K, f func(K) V) V {
	if m == nil {
		return f(k)
	}
	if v, ok := m.c.Get(k); ok {
		return v
	}
	v := f(k)
	m.c.Add(k, v, m.cost(k, v))
	return v
}
