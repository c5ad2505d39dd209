// Package storetest is the conformance suite every store backend runs: the
// behaviour package store documents, checked the same way for SQLite and
// Redis. A backend's test calls Run with a Backend that opens fresh stores.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// Backend opens stores of one backend for the suite.
type Backend struct {
	// Open returns a new, empty store; the suite closes it.
	Open func(t *testing.T) store.Store
	// Reopen closes s and opens the same data again, as a restarted
	// process would. Nil skips the restart checks.
	Reopen func(t *testing.T, s store.Store) store.Store
}

// Run runs every conformance check against b.
func Run(t *testing.T, b Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b Backend)
	}{
		{"Runs", testRuns},
		{"Stats", testStats},
		{"QueueBasics", testQueueBasics},
		{"QueueWaitsForWork", testQueueWaits},
		{"ConcurrentClaimers", testConcurrentClaimers},
		{"LeaseExpiryAndReclaim", testLeaseExpiry},
		{"ExtendKeepsTheLease", testExtend},
		{"DeadLetter", testDeadLetter},
		{"Results", testResults},
		{"Batch", testBatch},
		{"Draws", testDraws},
		{"Cache", testCache},
		{"Versions", testVersions},
		{"Locks", testLocks},
		{"RunsAreSeparate", testRunsSeparate},
		{"Restart", testRestart},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, b) })
	}
}

// open returns a fresh store closed when the test ends.
func open(t *testing.T, b Backend) store.Store {
	t.Helper()
	s := b.Open(t)
	t.Cleanup(func() { s.Close() })
	return s
}

// Context returns a context that ends with the test or after a minute.
// Backend tests use it too.
func Context(tb testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	tb.Cleanup(cancel)
	return c
}

// ctx is Context, for the suite's brevity.
func ctx(t *testing.T) context.Context { return Context(t) }

// Tasks returns n tasks of step 1 of run: queries q0, q1, … of four
// rollouts each, with seeds near the top of the int64 range (so a backend
// that loses precision on them fails). Backend tests use it too.
func Tasks(run string, n int) []rollout.RolloutTask {
	out := make([]rollout.RolloutTask, n)
	for i := range out {
		out[i] = rollout.RolloutTask{Run: run, Step: 1, QueryID: fmt.Sprintf("q%d", i/4), K: i % 4, Seed: math.MaxInt64 - int64(i), PolicyVersion: 3, ExecutorPolicyVersion: int64(i % 3)}
	}
	return out
}

// tasks is Tasks, for the suite's brevity.
func tasks(run string, n int) []rollout.RolloutTask { return Tasks(run, n) }

// mustCreateRun creates run id with a small configuration.
func mustCreateRun(t *testing.T, s store.Store, id string) store.RunRecord {
	t.Helper()
	r := store.RunRecord{ID: id, Version: store.RunRecordVersion, Config: json.RawMessage(`{"group_size":4,"mode":"mgrpo"}`),
		Created: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}
	if err := s.CreateRun(ctx(t), r); err != nil {
		t.Fatalf("CreateRun: %v", err)
	}
	return r
}

// eventually polls cond every 20 ms until it holds or 10 s pass: lease and
// TTL expiry are real time, and a loaded machine may be slow.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: err %v, want %v", what, err, target)
	}
}

func testRuns(t *testing.T, b Backend) {
	s := open(t, b)
	c := ctx(t)
	if _, err := s.Run(c, "r1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Run of a missing run: err %v, want ErrNotFound", err)
	}
	r := mustCreateRun(t, s, "r1")
	again := r
	again.Created = r.Created.Add(time.Hour)
	if err := s.CreateRun(c, again); err != nil {
		t.Errorf("CreateRun again with the same configuration: %v", err)
	}
	got, err := s.Run(c, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != r.ID || got.Version != r.Version || !got.Created.Equal(r.Created) || !jsonEqual(got.Config, r.Config) {
		t.Errorf("Run = %+v, want %+v (the first Created kept)", got, r)
	}
	other := r
	other.Config = json.RawMessage(`{"group_size":8}`)
	wantErr(t, "CreateRun with another configuration", s.CreateRun(c, other), store.ErrConflict)

	wantErr(t, "PutStep of a missing run", s.PutStep(c, "nope", store.StepRecord{Step: 1}), store.ErrNotFound)
	sum := &rollout.StepSummary{Step: 2, Rollouts: 8, DHistogram: map[int]int{1: 8}, ToolErrors: map[string]int{}}
	for _, st := range []store.StepRecord{
		{Step: 2, Status: store.StepScheduled, Rollouts: 8},
		{Step: 1, Status: store.StepWritten, Rollouts: 8, DBar: 2, Files: "out/step-000001"},
		{Step: 2, Status: store.StepWritten, Rollouts: 8, DBar: 3, Files: "out/step-000002", Summary: sum, ObservedD: []int{0, 3, 1, 2, 0, 0, 4, 1}},
	} {
		if err := s.PutStep(c, "r1", st); err != nil {
			t.Fatalf("PutStep %d: %v", st.Step, err)
		}
	}
	steps, err := s.Steps(c, "r1")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.StepRecord{
		{Step: 1, Status: store.StepWritten, Rollouts: 8, DBar: 2, Files: "out/step-000001"},
		{Step: 2, Status: store.StepWritten, Rollouts: 8, DBar: 3, Files: "out/step-000002", Summary: sum, ObservedD: []int{0, 3, 1, 2, 0, 0, 4, 1}},
	}
	if !reflect.DeepEqual(steps, want) {
		t.Errorf("Steps = %+v, want %+v", steps, want)
	}
	if _, err := s.StepFile(c, "r1", 2, "executor.jsonl"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("StepFile of a file never put: %v, want ErrNotFound", err)
	}
	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	for _, data := range [][]byte{[]byte("first"), big} {
		if err := s.PutStepFile(c, "r1", 2, "executor.jsonl", data); err != nil {
			t.Fatalf("PutStepFile: %v", err)
		}
		if got, err := s.StepFile(c, "r1", 2, "executor.jsonl"); err != nil || !bytes.Equal(got, data) {
			t.Errorf("StepFile = %d bytes, %v; want the %d bytes put last", len(got), err, len(data))
		}
	}
	if _, err := s.StepFile(c, "r1", 3, "executor.jsonl"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("StepFile of another step: %v, want ErrNotFound", err)
	}
	mustCreateRun(t, s, "r2")
	if steps, err := s.Steps(c, "r2"); err != nil || len(steps) != 0 {
		t.Errorf("Steps of a run without steps = %v, %v; want none", steps, err)
	}
}

func testStats(t *testing.T, b Backend) {
	s := open(t, b)
	c := ctx(t)
	mustCreateRun(t, s, "r")
	if _, err := s.StepStats(c, "r", 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("StepStats of a step without stats: err %v, want ErrNotFound", err)
	}
	stats := []rollout.QueryStats{
		{QueryID: "q1", MainRewards: []float64{1, 0, 0.1, 1}, MainMean: 0.525, MainStd: 0.4, D: []int{2, 0, 1, 3}, DBar: 2,
			SubRewards: []float64{0.9, 0.1, 0.5, 0.5, 0.2, 0.3, 0.4, 0.6}, SubMean: 0.4375, SubStd: 0.22},
		{QueryID: "q0", MainRewards: []float64{0, 0, 0, 0}, D: []int{0, 0, 0, 0}, DBar: 2},
	}
	if err := s.PutStats(c, "r", 1, stats); err != nil {
		t.Fatal(err)
	}
	got, err := s.StepStats(c, "r", 1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, stats) {
		t.Errorf("StepStats = %+v, want %+v (in the order put)", got, stats)
	}
	if err := s.PutStats(c, "r", 1, stats[:1]); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.StepStats(c, "r", 1); len(got) != 1 || got[0].QueryID != "q1" {
		t.Errorf("StepStats after a second PutStats = %+v, want it replaced", got)
	}
}

func testResults(t *testing.T, b Backend) {
	s := open(t, b)
	c := ctx(t)
	mustCreateRun(t, s, "r")
	if n, err := s.CountResults(c, "r", 1); err != nil || n != 0 {
		t.Errorf("CountResults of an empty step = %d, %v", n, err)
	}
	want := map[string]string{}
	for i := range 50 {
		id := fmt.Sprintf("r/1/q%d/%d", i/4, i%4)
		want[id] = fmt.Sprintf(`{"k":%d,"tree":{"answer":"a%d"}}`, i%4, i)
		if err := s.PutResult(c, "r", 1, id, json.RawMessage(want[id])); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutResult(c, "r", 1, "r/1/q0/0", json.RawMessage(`{"late":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutResult(c, "r", 2, "r/2/q0/0", json.RawMessage(`{"step":2}`)); err != nil {
		t.Fatal(err)
	}
	for id, w := range want {
		if got, err := s.Result(c, "r", 1, id); err != nil || string(got) != w {
			t.Errorf("Result(%s) = %s, %v; want %s", id, got, err, w)
		}
	}
	if _, err := s.Result(c, "r", 1, "r/1/missing/0"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Result of a task without one: %v, want ErrNotFound", err)
	}
	if _, err := s.Result(c, "r", 3, "r/1/q0/0"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Result of another step's task: %v, want ErrNotFound", err)
	}
	if n, err := s.CountResults(c, "r", 1); err != nil || n != 50 {
		t.Errorf("CountResults = %d, %v; want 50", n, err)
	}
	got := map[string]string{}
	err := s.ScanResults(c, "r", 1, func(id string, r json.RawMessage) error {
		got[id] = string(r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for id, w := range want {
		if !jsonEqual(json.RawMessage(got[id]), json.RawMessage(w)) {
			t.Errorf("result %s = %s, want %s (the first one put)", id, got[id], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("ScanResults saw %d results, want %d", len(got), len(want))
	}
	stop := errors.New("stop")
	seen := 0
	if err := s.ScanResults(c, "r", 1, func(string, json.RawMessage) error { seen++; return stop }); !errors.Is(err, stop) || seen != 1 {
		t.Errorf("ScanResults with a failing fn: err %v after %d calls, want fn's error after 1", err, seen)
	}
	if err := s.DeleteResults(c, "r", 1); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteResults(c, "r", 1); err != nil {
		t.Errorf("DeleteResults twice: %v", err)
	}
	if n, _ := s.CountResults(c, "r", 1); n != 0 {
		t.Errorf("%d results left after DeleteResults", n)
	}
	if n, _ := s.CountResults(c, "r", 2); n != 1 {
		t.Errorf("DeleteResults of step 1 removed step 2's results (%d left)", n)
	}
}

func testCache(t *testing.T, b Backend) {
	s := open(t, b)
	c := ctx(t)
	if v, ok, err := s.Get(c, "search:serper:abc"); err != nil || ok || v != nil {
		t.Errorf("Get of a missing key = %q, %v, %v", v, ok, err)
	}
	if err := s.Set(c, "k", []byte("v1"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(c, "k", []byte("v2"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.Get(c, "k"); err != nil || !ok || string(v) != "v2" {
		t.Errorf("Get = %q, %v, %v; want v2", v, ok, err)
	}
	if err := s.Set(c, "default-ttl", []byte{0, 1, 2, 255}, 0); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := s.Get(c, "default-ttl"); !ok || string(v) != "\x00\x01\x02\xff" {
		t.Errorf("binary value with the default TTL = %q, %v", v, ok)
	}
	if err := s.Set(c, "short", []byte("x"), 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	eventually(t, "an entry expires after its TTL", func() bool {
		_, ok, err := s.Get(c, "short")
		if err != nil {
			t.Fatal(err)
		}
		return !ok
	})
}

func testVersions(t *testing.T, b Backend) {
	s := open(t, b)
	c := ctx(t)
	mustCreateRun(t, s, "r")
	if v, err := s.PolicyVersion(c, "r", "planner"); err != nil || v != 0 {
		t.Errorf("PolicyVersion before any = %d, %v; want 0", v, err)
	}
	for _, v := range []int64{1, 3, 2} {
		if err := s.SetPolicyVersion(c, "r", "planner", v); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetPolicyVersion(c, "r", "executor", 7); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.PolicyVersion(c, "r", "planner"); v != 3 {
		t.Errorf("planner version = %d, want 3 (versions never move back)", v)
	}
	if v, _ := s.PolicyVersion(c, "r", "executor"); v != 7 {
		t.Errorf("executor version = %d, want 7", v)
	}
}

func testRunsSeparate(t *testing.T, b Backend) {
	s := open(t, b)
	c := ctx(t)
	if ids, err := s.RunIDs(c); err != nil || len(ids) != 0 {
		t.Errorf("RunIDs of an empty store = %q, %v; want none", ids, err)
	}
	mustCreateRun(t, s, "b")
	mustCreateRun(t, s, "a")
	if ids, err := s.RunIDs(c); err != nil || !slices.Equal(ids, []string{"a", "b"}) {
		t.Errorf("RunIDs = %q, %v; want [a b]", ids, err)
	}
	same := tasks("a", 2)
	if err := s.Enqueue(c, "a", same); err != nil {
		t.Fatal(err)
	}
	if err := s.Enqueue(c, "b", same); err != nil {
		t.Fatal(err)
	}
	leases, err := s.Claim(c, store.ClaimRequest{Run: "a", Worker: "w", Max: 10, Lease: time.Minute})
	if err != nil || len(leases) != 2 {
		t.Fatalf("Claim in run a = %v, %v", leases, err)
	}
	counts(t, s, "b", store.QueueCounts{Pending: 2})
	if err := s.PutResult(c, "a", 1, "x", json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.CountResults(c, "b", 1); n != 0 {
		t.Errorf("run b sees run a's results")
	}
	if err := s.SetPolicyVersion(c, "a", "planner", 5); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.PolicyVersion(c, "b", "planner"); v != 0 {
		t.Errorf("run b sees run a's policy version")
	}
}

func testRestart(t *testing.T, b Backend) {
	if b.Reopen == nil {
		t.Skip("the backend cannot be reopened")
	}
	s := b.Open(t)
	c := ctx(t)
	r := mustCreateRun(t, s, "r")
	stats := []rollout.QueryStats{{QueryID: "q", MainRewards: []float64{1, 0}, D: []int{1, 1}, DBar: 1}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.PutStep(c, "r", store.StepRecord{Step: 1, Status: store.StepScheduled, Rollouts: 3}))
	must(s.PutStats(c, "r", 1, stats))
	must(s.Enqueue(c, "r", tasks("r", 3)))
	leases, err := s.Claim(c, store.ClaimRequest{Run: "r", Worker: "w", Max: 2, Lease: time.Hour})
	if err != nil || len(leases) != 2 {
		t.Fatalf("Claim = %v, %v", leases, err)
	}
	must(s.Complete(c, leases[0]))
	must(s.PutResult(c, "r", 1, leases[0].Task.ID(), json.RawMessage(`{"done":true}`)))
	must(s.Set(c, "k", []byte("cached"), time.Hour))
	must(s.SetPolicyVersion(c, "r", "executor", 4))

	s = b.Reopen(t, s)
	t.Cleanup(func() { s.Close() })
	if got, err := s.Run(c, "r"); err != nil || got.ID != r.ID || !jsonEqual(got.Config, r.Config) {
		t.Errorf("Run after a restart = %+v, %v", got, err)
	}
	if steps, err := s.Steps(c, "r"); err != nil || len(steps) != 1 || steps[0].Rollouts != 3 {
		t.Errorf("Steps after a restart = %+v, %v", steps, err)
	}
	if got, err := s.StepStats(c, "r", 1); err != nil || !reflect.DeepEqual(got, stats) {
		t.Errorf("StepStats after a restart = %+v, %v", got, err)
	}
	counts(t, s, "r", store.QueueCounts{Pending: 1, Leased: 1, Done: 1})
	if err := s.Complete(c, leases[1]); err != nil {
		t.Errorf("Complete of a lease taken before the restart: %v", err)
	}
	if n, err := s.CountResults(c, "r", 1); err != nil || n != 1 {
		t.Errorf("CountResults after a restart = %d, %v", n, err)
	}
	if v, ok, _ := s.Get(c, "k"); !ok || string(v) != "cached" {
		t.Errorf("cache after a restart = %q, %v", v, ok)
	}
	if v, _ := s.PolicyVersion(c, "r", "executor"); v != 4 {
		t.Errorf("policy version after a restart = %d", v)
	}
}

// jsonEqual compares two JSON values ignoring insignificant whitespace
// and key order.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
