package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/storetest"
)

// TestWrongTypeIsCorrupt puts a value of the wrong type under each key a
// method touches: the method fails with ErrCorrupt and leaves the value
// as it was.
func TestWrongTypeIsCorrupt(t *testing.T) {
	raw := freshURL(t, testURL(t))
	s := mustOpen(t, raw)
	defer s.Close()
	c := rawClient(t, raw)
	run := store.RunRecord{ID: "", Version: store.RunRecordVersion, Config: json.RawMessage(`{}`), Created: time.Now()}
	createRun := func(ctx context.Context, s *Store, id string) (store.Lease, error) {
		r := run
		r.ID = id
		return store.Lease{}, s.CreateRun(ctx, r)
	}
	claimOne := func(ctx context.Context, s *Store, id string) (store.Lease, error) {
		if err := s.Enqueue(ctx, id, storetest.Tasks(id, 2)); err != nil {
			return store.Lease{}, err
		}
		l, err := s.Claim(ctx, store.ClaimRequest{Run: id, Worker: "w", Max: 1, Lease: time.Minute})
		if err != nil || len(l) != 1 {
			return store.Lease{}, fmt.Errorf("claim: %v, %v", l, err)
		}
		return l[0], nil
	}
	enqueue := func(ctx context.Context, s *Store, id string) (store.Lease, error) {
		return store.Lease{}, s.Enqueue(ctx, id, storetest.Tasks(id, 2))
	}
	claim := func(ctx context.Context, s *Store, id string, _ store.Lease) error {
		_, err := s.Claim(ctx, store.ClaimRequest{Run: id, Worker: "w", Max: 2, Lease: time.Minute})
		return err
	}
	stats := []rollout.QueryStats{{QueryID: "q"}}
	cases := []struct {
		name   string
		key    func(k runKeys, s *Store) string
		before func(ctx context.Context, s *Store, run string) (store.Lease, error)
		op     func(ctx context.Context, s *Store, run string, l store.Lease) error
	}{
		{"run/CreateRun", func(k runKeys, _ *Store) string { return k.run }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				_, err := createRun(ctx, s, id)
				return err
			}},
		{"run/Run", func(k runKeys, _ *Store) string { return k.run }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				_, err := s.Run(ctx, id)
				return err
			}},
		{"run/PutStep", func(k runKeys, _ *Store) string { return k.run }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				return s.PutStep(ctx, id, store.StepRecord{Step: 1})
			}},
		{"steps/PutStep", func(k runKeys, _ *Store) string { return k.steps }, createRun,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				return s.PutStep(ctx, id, store.StepRecord{Step: 1})
			}},
		{"steps/Steps", func(k runKeys, _ *Store) string { return k.steps }, createRun,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				_, err := s.Steps(ctx, id)
				return err
			}},
		{"stats/PutStats", func(k runKeys, _ *Store) string { return k.stats }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				return s.PutStats(ctx, id, 1, stats)
			}},
		{"stats/StepStats", func(k runKeys, _ *Store) string { return k.stats }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				_, err := s.StepStats(ctx, id, 1)
				return err
			}},
		{"versions/SetPolicyVersion", func(k runKeys, _ *Store) string { return k.versions }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				return s.SetPolicyVersion(ctx, id, "planner", 2)
			}},
		{"versions/PolicyVersion", func(k runKeys, _ *Store) string { return k.versions }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				_, err := s.PolicyVersion(ctx, id, "planner")
				return err
			}},
		{"queue/Enqueue", func(k runKeys, _ *Store) string { return k.queue }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				_, err := enqueue(ctx, s, id)
				return err
			}},
		{"queue/Claim", func(k runKeys, _ *Store) string { return k.queue }, nil, claim},
		{"queue/Counts", func(k runKeys, _ *Store) string { return k.queue }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				_, err := s.Counts(ctx, id)
				return err
			}},
		{"tasks/Enqueue", func(k runKeys, _ *Store) string { return k.tasks }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				_, err := enqueue(ctx, s, id)
				return err
			}},
		{"leases/Claim", func(k runKeys, _ *Store) string { return k.leases }, enqueue, claim},
		{"leases/Extend", func(k runKeys, _ *Store) string { return k.leases }, claimOne,
			func(ctx context.Context, s *Store, _ string, l store.Lease) error {
				_, err := s.Extend(ctx, l, time.Minute)
				return err
			}},
		{"leases/Complete", func(k runKeys, _ *Store) string { return k.leases }, claimOne,
			func(ctx context.Context, s *Store, _ string, l store.Lease) error { return s.Complete(ctx, l) }},
		{"done/Complete", func(k runKeys, _ *Store) string { return k.done }, claimOne,
			func(ctx context.Context, s *Store, _ string, l store.Lease) error { return s.Complete(ctx, l) }},
		{"dead/Claim", func(k runKeys, _ *Store) string { return k.dead }, enqueue, claim},
		{"dead/DeadLetters", func(k runKeys, _ *Store) string { return k.dead }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				_, err := s.DeadLetters(ctx, id)
				return err
			}},
		{"results/PutResult", func(k runKeys, _ *Store) string { return k.results(1) }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				return s.PutResult(ctx, id, 1, "t", json.RawMessage(`1`))
			}},
		{"results/ScanResults", func(k runKeys, _ *Store) string { return k.results(1) }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				return s.ScanResults(ctx, id, 1, func(string, json.RawMessage) error { return nil })
			}},
		{"results/CountResults", func(k runKeys, _ *Store) string { return k.results(1) }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				_, err := s.CountResults(ctx, id, 1)
				return err
			}},
		{"results/DeleteResults", func(k runKeys, _ *Store) string { return k.results(1) }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				return s.DeleteResults(ctx, id, 1)
			}},
		{"draws/PutDraw", func(k runKeys, _ *Store) string { return k.draws() }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				return s.PutDraw(ctx, id, 1, []byte(`{}`))
			}},
		{"draws/Draw", func(k runKeys, _ *Store) string { return k.draws() }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				_, err := s.Draw(ctx, id, 1)
				return err
			}},
		{"drawresults/PutDrawResult", func(k runKeys, _ *Store) string { return k.drawResults(1) }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				return s.PutDrawResult(ctx, id, 1, "t", json.RawMessage(`1`))
			}},
		{"drawresults/ScanDrawResults", func(k runKeys, _ *Store) string { return k.drawResults(1) }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				return s.ScanDrawResults(ctx, id, 1, func(string, json.RawMessage) error { return nil })
			}},
		{"drawresults/DeleteDrawResults", func(k runKeys, _ *Store) string { return k.drawResults(1) }, nil,
			func(ctx context.Context, s *Store, id string, _ store.Lease) error {
				return s.DeleteDrawResults(ctx, id, 1)
			}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := storetest.Context(t)
			id := fmt.Sprint("run", i)
			var l store.Lease
			if tc.before != nil {
				var err error
				if l, err = tc.before(ctx, s, id); err != nil {
					t.Fatalf("setup: %v", err)
				}
			}
			key := tc.key(s.keys(id), s)
			if err := c.Set(ctx, key, "not a "+tc.name, 0).Err(); err != nil {
				t.Fatal(err)
			}
			checkCorrupt(t, c, key, func() error { return tc.op(ctx, s, id, l) })
		})
	}
	t.Run("cache", func(t *testing.T) {
		ctx := storetest.Context(t)
		key := s.cacheKey("k")
		if err := c.HSet(ctx, key, "f", "v").Err(); err != nil {
			t.Fatal(err)
		}
		checkCorrupt(t, c, key, func() error { _, _, err := s.Get(ctx, "k"); return err })
		checkCorrupt(t, c, key, func() error { return s.Set(ctx, "k", []byte("v"), time.Hour) })
	})
	t.Run("a failed claim leaves nothing pending", func(t *testing.T) {
		ctx := storetest.Context(t)
		k := s.keys("run-leases")
		if err := s.Enqueue(ctx, "run-leases", storetest.Tasks("run-leases", 3)); err != nil {
			t.Fatal(err)
		}
		if err := c.Set(ctx, k.leases, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := claim(ctx, s, "run-leases", store.Lease{}); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("Claim: %v, want ErrCorrupt", err)
		}
		if p, err := c.XPending(ctx, k.queue, group).Result(); err != nil || p.Count != 0 {
			t.Errorf("pending entries after a failed claim: %+v, %v; want none", p, err)
		}
	})
}

// checkCorrupt runs op and checks that it fails with ErrCorrupt and that
// key's value is unchanged.
func checkCorrupt(t *testing.T, c *goredis.Client, key string, op func() error) {
	t.Helper()
	ctx := context.Background()
	before, err := c.Dump(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := op(); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("err %v, want ErrCorrupt", err)
	} else {
		t.Logf("%v", err)
	}
	if after, err := c.Dump(ctx, key).Result(); err != nil || after != before {
		t.Errorf("key %s changed (%v)", key, err)
	}
}

// TestUnreadableValuesAreCorrupt: values of the right type that do not
// parse are ErrCorrupt too.
func TestUnreadableValuesAreCorrupt(t *testing.T) {
	raw := freshURL(t, testURL(t))
	s := mustOpen(t, raw)
	defer s.Close()
	c := rawClient(t, raw)
	ctx := storetest.Context(t)
	k := s.keys("r")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.HSet(ctx, k.run, "id", "r", "version", "one", "config", "{}", "created", "2026-12-01T00:00:00Z").Err())
	must(c.HSet(ctx, k.steps, "1", "{not json").Err())
	must(c.HSet(ctx, k.stats, "1", "[{").Err())
	must(c.HSet(ctx, k.versions, "planner", "v3").Err())
	if err := s.Enqueue(ctx, "r", storetest.Tasks("r", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, store.ClaimRequest{Run: "r", Worker: "w", Max: 1, Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	must(c.XAdd(ctx, &goredis.XAddArgs{Stream: k.queue, Values: []string{"id", "x", "task", "{garbage"}}).Err())
	for name, op := range map[string]func() error{
		"Run":              func() error { _, err := s.Run(ctx, "r"); return err },
		"Steps":            func() error { _, err := s.Steps(ctx, "r"); return err },
		"StepStats":        func() error { _, err := s.StepStats(ctx, "r", 1); return err },
		"PolicyVersion":    func() error { _, err := s.PolicyVersion(ctx, "r", "planner"); return err },
		"SetPolicyVersion": func() error { return s.SetPolicyVersion(ctx, "r", "planner", 4) },
		"Claim": func() error {
			_, err := s.Claim(ctx, store.ClaimRequest{Run: "r", Worker: "w", Max: 1, Lease: time.Minute})
			return err
		},
	} {
		if err := op(); !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	if v, _ := c.HGet(ctx, k.versions, "planner").Result(); v != "v3" {
		t.Errorf("SetPolicyVersion replaced an unreadable version: %q", v)
	}
}
