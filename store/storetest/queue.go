package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/store"
)

// The work queue's checks: claims in enqueue order, waiting for work,
// concurrent claimers, lease expiry, extension and dead letters.

func testQueueBasics(t *testing.T, b Backend) {
	s := open(t, b)
	c := ctx(t)
	mustCreateRun(t, s, "r")
	all := tasks("r", 10)
	if err := s.Enqueue(c, "r", all); err != nil {
		t.Fatal(err)
	}
	counts(t, s, "r", store.QueueCounts{Pending: 10})
	leases, err := s.Claim(c, store.ClaimRequest{Run: "r", Worker: "w1", Max: 3, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != 3 {
		t.Fatalf("Claim Max 3 returned %d leases", len(leases))
	}
	for i, l := range leases {
		if l.Task != all[i] || l.Worker != "w1" || l.Attempt != 1 || time.Until(l.Expires) <= 0 {
			t.Errorf("lease %d = %+v, want task %+v in enqueue order, worker w1, attempt 1, a future expiry", i, l, all[i])
		}
	}
	counts(t, s, "r", store.QueueCounts{Pending: 7, Leased: 3})
	if err := s.Complete(c, leases[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(c, leases[0]); err != nil {
		t.Errorf("Complete twice: %v, want nil (idempotent)", err)
	}
	counts(t, s, "r", store.QueueCounts{Pending: 7, Leased: 2, Done: 1})
	// Enqueueing again changes nothing, done or not.
	if err := s.Enqueue(c, "r", all); err != nil {
		t.Fatal(err)
	}
	counts(t, s, "r", store.QueueCounts{Pending: 7, Leased: 2, Done: 1})
	if _, err := s.Extend(c, leases[0], time.Minute); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("Extend of a completed task: err %v, want ErrLeaseLost", err)
	}
	rest, err := s.Claim(c, store.ClaimRequest{Run: "r", Worker: "w2", Max: 100, Lease: time.Minute})
	if err != nil || len(rest) != 7 {
		t.Fatalf("Claim of the rest = %d leases, %v; want 7", len(rest), err)
	}
	for _, l := range append(rest, leases[1:]...) {
		if err := s.Complete(c, l); err != nil {
			t.Fatal(err)
		}
	}
	counts(t, s, "r", store.QueueCounts{Done: 10})
	if none, err := s.Claim(c, store.ClaimRequest{Run: "r", Worker: "w1", Max: 1, Lease: time.Minute}); err != nil || len(none) != 0 {
		t.Errorf("Claim of an empty queue = %v, %v; want none at once", none, err)
	}
	if dead, err := s.DeadLetters(c, "r"); err != nil || len(dead) != 0 {
		t.Errorf("DeadLetters = %v, %v; want none", dead, err)
	}
}

func counts(t *testing.T, s store.Store, run string, want store.QueueCounts) {
	t.Helper()
	got, err := s.Counts(ctx(t), run)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Counts = %+v, want %+v", got, want)
	}
}

func testQueueWaits(t *testing.T, b Backend) {
	s := open(t, b)
	c := ctx(t)
	mustCreateRun(t, s, "r")
	got := make(chan []store.Lease, 1)
	errc := make(chan error, 1)
	go func() {
		l, err := s.Claim(c, store.ClaimRequest{Run: "r", Worker: "w", Max: 1, Lease: time.Minute, Wait: 20 * time.Second})
		got <- l
		errc <- err
	}()
	// The claimer is waiting (or about to); the task arrives after it.
	time.Sleep(100 * time.Millisecond)
	if err := s.Enqueue(c, "r", tasks("r", 1)); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-got:
		if err := <-errc; err != nil || len(l) != 1 {
			t.Errorf("a waiting Claim returned %v, %v; want the task enqueued while it waited", l, err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a waiting Claim did not return the task enqueued while it waited")
	}
	cctx, cancel := context.WithCancel(c)
	go func() {
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	_, err := s.Claim(cctx, store.ClaimRequest{Run: "r", Worker: "w", Max: 1, Lease: time.Minute, Wait: 30 * time.Second})
	if err == nil && time.Since(start) > 15*time.Second {
		t.Error("a waiting Claim ignored its context's cancellation")
	}
}

func testConcurrentClaimers(t *testing.T, b Backend) {
	s := open(t, b)
	c := ctx(t)
	mustCreateRun(t, s, "r")
	const n, workers = 200, 8
	if err := s.Enqueue(c, "r", tasks("r", n)); err != nil {
		t.Fatal(err)
	}
	type claim struct {
		id     string
		worker int
	}
	claims := make(chan claim, n*2)
	errc := make(chan error, workers)
	for w := range workers {
		go func() {
			for {
				leases, err := s.Claim(c, store.ClaimRequest{Run: "r", Worker: fmt.Sprint("w", w), Max: 5, Lease: time.Minute})
				if err != nil {
					errc <- err
					return
				}
				if len(leases) == 0 {
					errc <- nil
					return
				}
				for _, l := range leases {
					claims <- claim{l.Task.ID(), w}
					if err := s.Complete(c, l); err != nil {
						errc <- err
						return
					}
				}
			}
		}()
	}
	for range workers {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	close(claims)
	seen := map[string]int{}
	for cl := range claims {
		seen[cl.id]++
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("task %s was claimed %d times", id, k)
		}
	}
	if len(seen) != n {
		t.Errorf("%d tasks claimed, want %d", len(seen), n)
	}
	counts(t, s, "r", store.QueueCounts{Done: n})
}

func testLeaseExpiry(t *testing.T, b Backend) {
	s := open(t, b)
	c := ctx(t)
	mustCreateRun(t, s, "r")
	if err := s.Enqueue(c, "r", tasks("r", 1)); err != nil {
		t.Fatal(err)
	}
	first, err := s.Claim(c, store.ClaimRequest{Run: "r", Worker: "w1", Max: 1, Lease: 300 * time.Millisecond})
	if err != nil || len(first) != 1 {
		t.Fatalf("Claim = %v, %v", first, err)
	}
	var second []store.Lease
	eventually(t, "an expired lease is claimed again", func() bool {
		second, err = s.Claim(c, store.ClaimRequest{Run: "r", Worker: "w2", Max: 1, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return len(second) == 1
	})
	if l := second[0]; l.Task != first[0].Task || l.Worker != "w2" || l.Attempt != 2 {
		t.Errorf("reclaimed lease = %+v, want the same task, worker w2, attempt 2", l)
	}
	if _, err := s.Extend(c, first[0], time.Minute); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("Extend of a reclaimed lease: err %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(c, first[0]); err != nil {
		t.Errorf("Complete by the first holder after a reclaim: %v, want nil", err)
	}
	if err := s.Complete(c, second[0]); err != nil {
		t.Errorf("Complete by the second holder: %v, want nil", err)
	}
	counts(t, s, "r", store.QueueCounts{Done: 1})
}

func testExtend(t *testing.T, b Backend) {
	s := open(t, b)
	c := ctx(t)
	mustCreateRun(t, s, "r")
	if err := s.Enqueue(c, "r", tasks("r", 1)); err != nil {
		t.Fatal(err)
	}
	leases, err := s.Claim(c, store.ClaimRequest{Run: "r", Worker: "w1", Max: 1, Lease: 400 * time.Millisecond})
	if err != nil || len(leases) != 1 {
		t.Fatalf("Claim = %v, %v", leases, err)
	}
	l := leases[0]
	end := time.Now().Add(1200 * time.Millisecond)
	for time.Now().Before(end) {
		if l, err = s.Extend(c, l, 5*time.Second); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		if other, err := s.Claim(c, store.ClaimRequest{Run: "r", Worker: "w2", Max: 1, Lease: time.Minute}); err != nil || len(other) != 0 {
			t.Fatalf("another worker claimed an extended lease: %v, %v", other, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	counts(t, s, "r", store.QueueCounts{Leased: 1})
	if err := s.Complete(c, l); err != nil {
		t.Fatal(err)
	}
}

func testDeadLetter(t *testing.T, b Backend) {
	s := open(t, b)
	c := ctx(t)
	mustCreateRun(t, s, "r")
	task := tasks("r", 1)
	if err := s.Enqueue(c, "r", task); err != nil {
		t.Fatal(err)
	}
	req := store.ClaimRequest{Run: "r", Worker: "w1", Max: 1, Lease: 200 * time.Millisecond, MaxAttempts: 2}
	var last []store.Lease
	for attempt := 1; attempt <= 2; attempt++ {
		eventually(t, fmt.Sprintf("attempt %d is claimed", attempt), func() bool {
			var err error
			last, err = s.Claim(c, req)
			if err != nil {
				t.Fatal(err)
			}
			return len(last) == 1
		})
		if last[0].Attempt != attempt {
			t.Errorf("claim %d: attempt %d", attempt, last[0].Attempt)
		}
	}
	eventually(t, "the task is dead-lettered after 2 expired leases", func() bool {
		got, err := s.Claim(c, req)
		if err != nil || len(got) != 0 {
			t.Fatalf("Claim after the last attempt = %v, %v; want nothing", got, err)
		}
		n, err := s.Counts(c, "r")
		if err != nil {
			t.Fatal(err)
		}
		return n.Dead == 1
	})
	dead, err := s.DeadLetters(c, "r")
	if err != nil || len(dead) != 1 || dead[0].Task != task[0] || dead[0].Attempts != 2 || dead[0].LastWorker != "w1" {
		t.Errorf("DeadLetters = %+v, %v; want the task after 2 attempts by w1", dead, err)
	}
	counts(t, s, "r", store.QueueCounts{Dead: 1})
	if err := s.Enqueue(c, "r", task); err != nil {
		t.Fatal(err)
	}
	counts(t, s, "r", store.QueueCounts{Dead: 1})
	// The last holder finishes after all: the task is done, not dead.
	if err := s.Complete(c, last[0]); err != nil {
		t.Fatalf("Complete of a dead-lettered task by its last holder: %v", err)
	}
	counts(t, s, "r", store.QueueCounts{Done: 1})
	if dead, err := s.DeadLetters(c, "r"); err != nil || len(dead) != 0 {
		t.Errorf("DeadLetters after the late completion = %+v, %v; want none", dead, err)
	}
}
