package cache

import (
	"fmt"
	"sync"
	"testing"
)

// TestBound checks that the summed cost never passes the bound, whatever
// the costs of the entries added.
func TestBound(t *testing.T) {
	const maxCost = 10000
	c := New[int, int](maxCost)
	for k := range 5000 {
		c.Add(k, k, (k*37)%3000)
		if st := c.Stats(); st.Cost > maxCost {
			t.Fatalf("after %d adds: cost %d, bound %d", k+1, st.Cost, maxCost)
		}
	}
	if st := c.Stats(); st.Rotations == 0 {
		t.Fatalf("no rotation after 5000 adds: %+v", st)
	}
}

// TestHotEntriesSurvive checks that an entry used at least once per
// generation stays however many one-off entries pass through, which
// "start over when full" did not do.
func TestHotEntriesSurvive(t *testing.T) {
	c := New[string, int](100 * (10 + entryOverhead))
	c.Add("hot", 1, 10)
	for i := range 10000 {
		c.Add(fmt.Sprint("once ", i), i, 10)
		if i%20 == 0 {
			if v, ok := c.Get("hot"); !ok || v != 1 {
				t.Fatalf("after %d one-off entries: Get(hot) = %d, %v; want 1, true", i+1, v, ok)
			}
		}
	}
	if _, ok := c.Get("once 0"); ok {
		t.Fatalf("the first one-off entry is still held after 10,000 more")
	}
}

// TestAddAndGet checks look-ups, replacement, entries too large to keep and
// the nil cache.
func TestAddAndGet(t *testing.T) {
	c := New[string, string](1000)
	if _, ok := c.Get("a"); ok {
		t.Fatalf("Get on an empty cache found a value")
	}
	c.Add("a", "x", 1)
	c.Add("a", "y", 1)
	if v, ok := c.Get("a"); !ok || v != "y" {
		t.Fatalf("Get(a) = %q, %v; want y, true", v, ok)
	}
	if st := c.Stats(); st.Entries != 1 || st.Cost != 1+entryOverhead {
		t.Fatalf("stats after replacing a: %+v, want 1 entry of cost %d", st, 1+entryOverhead)
	}
	c.Add("big", "z", 500)
	if _, ok := c.Get("big"); ok {
		t.Fatalf("an entry costing more than half the bound was kept")
	}
	var nilc *Cache[string, string]
	nilc.Add("a", "x", 1)
	if _, ok := nilc.Get("a"); ok || nilc.Stats() != (Stats{}) {
		t.Fatalf("the nil cache holds something")
	}
}

// TestConcurrentUse runs adds and gets from several goroutines, for the
// race detector.
func TestConcurrentUse(t *testing.T) {
	c := New[int, int](50 * (8 + entryOverhead))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				k := (i * (g + 1)) % 300
				if v, ok := c.Get(k); ok && v != k*k {
					t.Errorf("Get(%d) = %d, want %d", k, v, k*k)
					return
				}
				c.Add(k, k*k, 8)
			}
		}()
	}
	wg.Wait()
}
