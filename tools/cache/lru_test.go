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

func TestLRUDecodedValues(t *testing.T) {
	ctx := context.Background()
	c := NewLRU(2, time.Minute)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }

	if _, ok := c.GetDecoded(ctx, "a"); ok {
		t.Fatal("decoded value of an absent key")
	}
	v1 := []byte(`"one"`)
	_ = c.Set(ctx, "a", v1, 0)
	if _, ok := c.GetDecoded(ctx, "a"); ok {
		t.Fatal("decoded value before one was attached")
	}
	c.AttachDecoded("a", v1, "one")
	if got, ok := c.GetDecoded(ctx, "a"); !ok || got != "one" {
		t.Fatalf("GetDecoded = %v, %v; want one, true", got, ok)
	}

	// A Set with new bytes drops the old decoded value, and a late attach
	// carrying the old bytes (a reader that decoded before the Set) is
	// ignored, even when the contents are equal.
	v2 := []byte(`"two"`)
	_ = c.Set(ctx, "a", v2, 0)
	if _, ok := c.GetDecoded(ctx, "a"); ok {
		t.Fatal("decoded value survived a Set")
	}
	c.AttachDecoded("a", v1, "one")
	c.AttachDecoded("a", []byte(`"two"`), "stale copy")
	if _, ok := c.GetDecoded(ctx, "a"); ok {
		t.Fatal("attach with bytes the entry does not hold was accepted")
	}
	c.AttachDecoded("a", v2, "two")
	if got, _ := c.GetDecoded(ctx, "a"); got != "two" {
		t.Fatalf("GetDecoded = %v, want two", got)
	}
	c.AttachDecoded("absent", v2, "x")
	if _, ok := c.GetDecoded(ctx, "absent"); ok {
		t.Fatal("attach created an entry")
	}

	// Expiry and eviction take the decoded value with the entry.
	now = now.Add(2 * time.Minute)
	if _, ok := c.GetDecoded(ctx, "a"); ok {
		t.Fatal("decoded value of an expired entry")
	}
	if c.Len() != 0 {
		t.Fatalf("expired entry kept: Len = %d", c.Len())
	}
}
