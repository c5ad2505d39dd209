package redis

import (
	"sync"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/storetest"
)

// TestConformanceWriteBehind runs the conformance suite on the Redis
// store behind a write-behind buffer, as mgrpo uses it.
func TestConformanceWriteBehind(t *testing.T) {
	raw := testURL(t)
	bound := store.WriteBehindBound{Writes: 8, Bytes: 1 << 20, Delay: 20 * time.Millisecond}
	var mu sync.Mutex
	urls := map[store.Store]string{}
	open := func(t *testing.T, u string) store.Store {
		s := store.NewWriteBehind(mustOpen(t, u), bound)
		mu.Lock()
		urls[s] = u
		mu.Unlock()
		return s
	}
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.Store { return open(t, freshURL(t, raw)) },
		Reopen: func(t *testing.T, s store.Store) store.Store {
			mu.Lock()
			u := urls[s]
			mu.Unlock()
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			return open(t, u)
		},
	})
}
