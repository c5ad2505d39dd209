package cache

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestLRUEvictsLeastRecentlyUsed(t *testing.T) {
	ctx := context.Background()
	c := NewLRU(2, time.Hour)
	_ = c.Set(ctx, "a", []byte("1"), 0)
	_ = c.Set(ctx, "b", []byte("2"), 0)
	if _, ok, _ := c.Get(ctx, "a"); !ok {
		t.Fatal("a missing")
	}
	_ = c.Set(ctx, "c", []byte("3"), 0) // evicts b, the least recently used
	if _, ok, _ := c.Get(ctx, "b"); ok {
		t.Error("b survived eviction")
	}
	for _, k := range []string{"a", "c"} {
		if _, ok, _ := c.Get(ctx, k); !ok {
			t.Errorf("%s evicted", k)
		}
	}
	if got, want := c.Len(), 2; got != want {
		t.Errorf("Len = %d, want %d", got, want)
	}
}

func TestLRUExpires(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	c := NewLRU(10, time.Minute)
	c.now = func() time.Time { return now }
	_ = c.Set(ctx, "k", []byte("v"), 10*time.Second)
	_ = c.Set(ctx, "d", []byte("v"), 0)
	now = now.Add(9 * time.Second)
	if v, ok, _ := c.Get(ctx, "k"); !ok || string(v) != "v" {
		t.Fatalf("Get before TTL = %q, %v", v, ok)
	}
	now = now.Add(time.Second)
	if _, ok, _ := c.Get(ctx, "k"); ok {
		t.Error("entry served at its expiry")
	}
	if _, ok, _ := c.Get(ctx, "d"); !ok {
		t.Error("default-TTL entry expired early")
	}
	now = now.Add(time.Minute)
	if _, ok, _ := c.Get(ctx, "d"); ok {
		t.Error("default-TTL entry outlived its TTL")
	}
}

func TestLRUConcurrent(t *testing.T) {
	ctx := context.Background()
	c := NewLRU(50, time.Hour)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				k := fmt.Sprint(g, i%70)
				_ = c.Set(ctx, k, []byte(k), 0)
				_, _, _ = c.Get(ctx, k)
			}
		}()
	}
	wg.Wait()
	if c.Len() > 50 {
		t.Errorf("Len = %d > max 50", c.Len())
	}
}

func TestKeyAndNormalize(t *testing.T) {
	if got, want := Normalize("  Hello\u3000  World\t"), "hello world"; got != want {
		t.Errorf("Normalize = %q, want %q", got, want)
	}
	a := Key("search", "serper", Normalize("Foo  bar"), "10")
	b := Key("search", "serper", Normalize("foo bar "), "10")
	if a != b {
		t.Errorf("keys differ for equal normalized args: %s %s", a, b)
	}
	if a == Key("search", "brave", "foo bar", "10") || a == Key("search", "serper", "foo bar", "1", "0") {
		t.Error("distinct calls share a key")
	}
}
