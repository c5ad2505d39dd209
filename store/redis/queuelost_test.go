package redis

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/storetest"
)

// TestQueueLostUnderItsRecord: a queue stream deleted, or its consumer
// group destroyed, while the run's record stays makes Counts and Claim
// fail with store.ErrQueueLost naming the key, instead of a queue that
// looks empty for ever.
func TestQueueLostUnderItsRecord(t *testing.T) {
	raw := testURL(t)
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, s *Store, run string)
		want string
	}{
		{"stream deleted", func(t *testing.T, s *Store, run string) {
			if err := rawClient(t, raw).Del(storetest.Context(t), s.keys(run).queue).Err(); err != nil {
				t.Fatal(err)
			}
		}, "is gone, while 4 tasks were enqueued"},
		{"group destroyed", func(t *testing.T, s *Store, run string) {
			if err := rawClient(t, raw).XGroupDestroy(storetest.Context(t), s.keys(run).queue, group).Err(); err != nil {
				t.Fatal(err)
			}
		}, "consumer group workers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t, freshURL(t, raw))
			ctx := storetest.Context(t)
			if err := s.Enqueue(ctx, "r", storetest.Tasks("r", 4)); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Counts(ctx, "r"); err != nil {
				t.Fatalf("Counts of an intact queue: %v", err)
			}
			tc.lose(t, s, "r")
			_, err := s.Counts(ctx, "r")
			if !errors.Is(err, store.ErrQueueLost) || !strings.Contains(err.Error(), tc.want) || store.Transient(err) {
				t.Errorf("Counts: %v; want ErrQueueLost saying %q, not transient", err, tc.want)
			}
			_, err = s.Claim(ctx, store.ClaimRequest{Run: "r", Worker: "w", Max: 1, Lease: time.Second})
			if !errors.Is(err, store.ErrQueueLost) {
				t.Errorf("Claim: %v; want ErrQueueLost", err)
			}
		})
	}
	// A run that never enqueued has no queue to lose.
	s := mustOpen(t, freshURL(t, raw))
	if _, err := s.Counts(storetest.Context(t), "none"); err != nil {
		t.Errorf("Counts of a run without tasks: %v", err)
	}
}
