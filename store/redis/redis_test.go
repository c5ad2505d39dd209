package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/storetest"
)

// envURL names the variable holding the URL of a Redis the tests may
// write to (each test under a fresh random prefix, removed afterwards).
const envURL = "MGRPO_TEST_REDIS"

// testURL returns the test Redis URL, or skips the test without one.
func testURL(tb testing.TB) string {
	tb.Helper()
	raw := os.Getenv(envURL)
	if raw == "" {
		tb.Skipf("%s is not set: start a Redis (redis-server --port 6390 --save '' --appendonly no) and run "+
			"%s=redis://127.0.0.1:6390/0 go test ./store/redis (.ci/run does both)", envURL, envURL)
	}
	return raw
}

// withPrefix returns raw with its prefix parameter set to prefix.
func withPrefix(tb testing.TB, raw, prefix string) string {
	tb.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		tb.Fatalf("%s: %v", envURL, err)
	}
	q := u.Query()
	q.Set("prefix", prefix)
	u.RawQuery = q.Encode()
	return u.String()
}

// freshURL returns raw with a new random prefix whose keys are removed
// when the test ends.
func freshURL(tb testing.TB, raw string) string {
	tb.Helper()
	var b [6]byte
	rand.Read(b[:])
	prefix := "mgrpotest:" + hex.EncodeToString(b[:]) + ":"
	tb.Cleanup(func() { deleteKeys(tb, raw, prefix) })
	return withPrefix(tb, raw, prefix)
}

// deleteKeys removes every key that starts with prefix.
func deleteKeys(tb testing.TB, raw, prefix string) {
	c := rawClient(tb, raw)
	ctx := context.Background()
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		if err := c.Unlink(ctx, iter.Val()).Err(); err != nil {
			tb.Errorf("cleanup of %s: %v", iter.Val(), err)
			return
		}
	}
	if err := iter.Err(); err != nil {
		tb.Errorf("cleanup of %s*: %v", prefix, err)
	}
}

// rawClient returns a plain go-redis client on raw, closed with the test.
func rawClient(tb testing.TB, raw string) *goredis.Client {
	tb.Helper()
	opt, _, err := parseURL(raw)
	if err != nil {
		tb.Fatal(err)
	}
	c := goredis.NewClient(opt)
	tb.Cleanup(func() { c.Close() })
	return c
}

// mustOpen opens a store on raw.
func mustOpen(tb testing.TB, raw string) *Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, raw)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	raw := testURL(t)
	var mu sync.Mutex
	urls := map[store.Store]string{}
	open := func(t *testing.T, u string) store.Store {
		s := mustOpen(t, u)
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

// TestTwoStoresClaimConcurrently claims one queue from two Stores, as two
// worker processes would: every task is leased once.
func TestTwoStoresClaimConcurrently(t *testing.T) {
	u := freshURL(t, testURL(t))
	a, b := mustOpen(t, u), mustOpen(t, u)
	defer a.Close()
	defer b.Close()
	ctx := storetest.Context(t)
	const n = 300
	if err := a.Enqueue(ctx, "r", storetest.Tasks("r", n)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for w := range 8 {
		s := a
		if w%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for {
				leases, err := s.Claim(ctx, store.ClaimRequest{Run: "r", Worker: fmt.Sprint("w", w), Max: 3, Lease: time.Minute})
				if err != nil {
					errc <- err
					return
				}
				if len(leases) == 0 {
					return
				}
				for _, l := range leases {
					mu.Lock()
					claimed[l.Task.ID()]++
					mu.Unlock()
					if err := s.Complete(ctx, l); err != nil {
						errc <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	for id, k := range claimed {
		if k != 1 {
			t.Errorf("task %s claimed %d times", id, k)
		}
	}
	if len(claimed) != n {
		t.Errorf("%d tasks claimed, want %d", len(claimed), n)
	}
	if got, err := b.Counts(ctx, "r"); err != nil || got != (store.QueueCounts{Done: n}) {
		t.Errorf("Counts from the other store = %+v, %v; want %d done", got, err, n)
	}
}

// TestWaitingClaimGetsAnExpiredLease: a Claim waiting for work wakes for a
// lease that expires while it waits, not only for new tasks.
func TestWaitingClaimGetsAnExpiredLease(t *testing.T) {
	s := mustOpen(t, freshURL(t, testURL(t)))
	defer s.Close()
	ctx := storetest.Context(t)
	if err := s.Enqueue(ctx, "r", storetest.Tasks("r", 1)); err != nil {
		t.Fatal(err)
	}
	first, err := s.Claim(ctx, store.ClaimRequest{Run: "r", Worker: "w1", Max: 1, Lease: 200 * time.Millisecond})
	if err != nil || len(first) != 1 {
		t.Fatalf("Claim = %v, %v", first, err)
	}
	got, err := s.Claim(ctx, store.ClaimRequest{Run: "r", Worker: "w2", Max: 1, Lease: time.Minute, Wait: 30 * time.Second})
	if err != nil || len(got) != 1 || got[0].Attempt != 2 || got[0].Task != first[0].Task {
		t.Fatalf("waiting Claim = %+v, %v; want the expired lease's task at attempt 2", got, err)
	}
}

// TestCompleteAfterDeadLetter: the holder of a lease whose task was
// dead-lettered cannot extend it, but may still complete it: the task then
// leaves the dead letters and counts as done, once.
func TestCompleteAfterDeadLetter(t *testing.T) {
	s := mustOpen(t, freshURL(t, testURL(t)))
	defer s.Close()
	ctx := storetest.Context(t)
	if err := s.Enqueue(ctx, "r", storetest.Tasks("r", 1)); err != nil {
		t.Fatal(err)
	}
	req := store.ClaimRequest{Run: "r", Worker: "w", Max: 1, Lease: 100 * time.Millisecond, MaxAttempts: 1}
	l, err := s.Claim(ctx, req)
	if err != nil || len(l) != 1 {
		t.Fatalf("Claim = %v, %v", l, err)
	}
	req.Wait = 30 * time.Second
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := s.Counts(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		if n.Dead == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not dead-lettered: %+v", n)
		}
		if _, err := s.Claim(ctx, store.ClaimRequest{Run: "r", Worker: "w", Max: 1, Lease: time.Minute, MaxAttempts: 1}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := s.Extend(ctx, l[0], time.Minute); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("Extend of a dead-lettered task: %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(ctx, l[0]); err != nil {
		t.Errorf("Complete of a dead-lettered task: %v, want nil", err)
	}
	if err := s.Complete(ctx, l[0]); err != nil {
		t.Errorf("Complete of it again: %v, want nil", err)
	}
	if n, err := s.Counts(ctx, "r"); err != nil || n != (store.QueueCounts{Done: 1}) {
		t.Errorf("Counts = %+v, %v; want one done", n, err)
	}
}

// TestOpenUnreachable: the error of a Redis that does not answer names
// the URL without its password. It needs no Redis: the port is one
// nothing listens on.
func TestOpenUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const password = "s3cret-Passw0rd"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, "redis://alice:"+password+"@"+addr+"/0?prefix=p:")
	if err == nil {
		s.Close()
		t.Fatalf("Open of %s succeeded, want an error", addr)
	}
	msg := err.Error()
	if strings.Contains(msg, password) {
		t.Errorf("error %q holds the password", msg)
	}
	if want := "redis://" + addr + "/0?prefix=p:"; !strings.Contains(msg, want) {
		t.Errorf("error %q does not name %s", msg, want)
	}
}

// TestACLUser opens a store as an ACL user limited to the store's keys,
// and refuses a wrong password without printing it.
func TestACLUser(t *testing.T) {
	raw := testURL(t)
	admin := rawClient(t, raw)
	ctx := storetest.Context(t)
	var b [4]byte
	rand.Read(b[:])
	user, password := "mgrpotest-"+hex.EncodeToString(b[:]), "pw-"+hex.EncodeToString(b[:])+"-x"
	u := freshURL(t, raw)
	prefix, _ := url.Parse(u)
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "on", ">"+password, "~"+prefix.Query().Get("prefix")+"*", "+@all").Err(); err != nil {
		t.Skipf("this Redis does not let the test add an ACL user: %v", err)
	}
	t.Cleanup(func() { admin.Do(context.Background(), "ACL", "DELUSER", user) })
	asUser := func(pw string) string {
		v, _ := url.Parse(u)
		v.User = url.UserPassword(user, pw)
		return v.String()
	}
	s := mustOpen(t, asUser(password))
	defer s.Close()
	if err := s.Enqueue(ctx, "r", storetest.Tasks("r", 2)); err != nil {
		t.Fatal(err)
	}
	if l, err := s.Claim(ctx, store.ClaimRequest{Run: "r", Worker: "w", Max: 2, Lease: time.Minute}); err != nil || len(l) != 2 {
		t.Fatalf("Claim as an ACL user = %v, %v", l, err)
	}
	wrong := "wrong-" + password
	if s, err := Open(ctx, asUser(wrong)); err == nil {
		s.Close()
		t.Error("Open with a wrong password succeeded")
	} else if strings.Contains(err.Error(), wrong) {
		t.Errorf("error %q holds the password", err)
	}
}

// TestWaitingClaimEndsWithItsContext: a Claim waiting longer than its
// context's deadline returns the context's error, whichever of the
// connection's read deadline and the context's timer comes first.
func TestWaitingClaimEndsWithItsContext(t *testing.T) {
	s := mustOpen(t, freshURL(t, testURL(t)))
	defer s.Close()
	for _, d := range []time.Duration{time.Millisecond, 300 * time.Millisecond, 700 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		l, err := s.Claim(ctx, store.ClaimRequest{Run: "r", Worker: "w", Max: 1, Lease: time.Minute, Wait: 30 * time.Second})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || len(l) != 0 {
			t.Errorf("Claim with a %v deadline = %v, %v; want context.DeadlineExceeded", d, l, err)
		}
	}
}
