package cache

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// LRU is an in-memory Cache holding at most a fixed number of entries,
// evicting the least recently used one when full; expired entries are
// dropped when read.
type LRU struct {
	mu      sync.Mutex
	max     int
	ttl     time.Duration
	ll      *list.List
	entries map[string]*list.Element
	now     func() time.Time
}

type entry struct {
	key     string
	value   []byte
	decoded any
	expires time.Time
}

var _ DecodedCache = (*LRU)(nil)

// NewLRU returns an LRU of at most maxEntries (≤ 0 means 10000) whose
// entries live defaultTTL (≤ 0 means one hour) unless Set says otherwise.
func NewLRU(maxEntries int, defaultTTL time.Duration) *LRU {
	if maxEntries <= 0 {
		maxEntries = 10000
	}
	if defaultTTL <= 0 {
		defaultTTL = time.Hour
	}
	return &LRU{max: maxEntries, ttl: defaultTTL, ll: list.New(), entries: map[string]*list.Element{}, now: time.Now}
}

// Get implements Cache; it never fails.
func (c *LRU) Get(_ context.Context, key string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.live(key)
	if e == nil {
		return nil, false, nil
	}
	return e.value, true, nil
}

// GetDecoded implements DecodedCache.
func (c *LRU) GetDecoded(_ context.Context, key string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.live(key)
	if e == nil || e.decoded == nil {
		return nil, false
	}
	return e.decoded, true
}

// AttachDecoded implements DecodedCache.
func (c *LRU) AttachDecoded(key string, value []byte, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return
	}
	if e := el.Value.(*entry); sameBytes(e.value, value) {
		e.decoded = v
	}
}

// live returns key's entry, marked most recently used, or nil when it is
// absent or expired (an expired entry is dropped). c.mu must be held.
func (c *LRU) live(key string) *entry {
	el, ok := c.entries[key]
	if !ok {
		return nil
	}
	e := el.Value.(*entry)
	if !c.now().Before(e.expires) {
		c.ll.Remove(el)
		delete(c.entries, key)
		return nil
	}
	c.ll.MoveToFront(el)
	return e
}

// sameBytes reports whether a and b are the same slice (not merely equal
// contents): the LRU never copies values, so identity is what says the
// entry was not replaced since the caller read or wrote it.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Set implements Cache; it never fails. The value is not copied: callers
// must not modify it afterwards.
func (c *LRU) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		ttl = c.ttl
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	exp := c.now().Add(ttl)
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*entry)
		e.value, e.decoded, e.expires = value, nil, exp
		c.ll.MoveToFront(el)
		return nil
	}
	c.entries[key] = c.ll.PushFront(&entry{key: key, value: value, expires: exp})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.entries, last.Value.(*entry).key)
	}
	return nil
}

// Len returns the number of entries held, expired ones included.
func (c *LRU) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
