package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/sqlite"
	"github.com/mgrpo/mgrpo/store/storetest"
)

// MustOpen opens the store at path, closed when the test ends.
func MustOpen(tb testing.TB, path string, opts ...sqlite.Option) *sqlite.Store {
	tb.Helper()
	s, err := sqlite.Open(context.Background(), path, opts...)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// tempPath returns the path of a store file in a new temporary directory.
func tempPath(tb testing.TB) string {
	return filepath.Join(tb.TempDir(), "store.db")
}

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.Store { return MustOpen(t, tempPath(t)) },
		Reopen: func(t *testing.T, s store.Store) store.Store {
			path := s.(*sqlite.Store).Path()
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			return MustOpen(t, path)
		},
	})
}

// drain claims and completes tasks of run until the queue has none,
// sending each claimed task id to ids.
func drain(ctx context.Context, s store.Store, run, worker string, ids chan<- string) error {
	for {
		leases, err := s.Claim(ctx, store.ClaimRequest{Run: run, Worker: worker, Max: 3, Lease: time.Minute})
		if err != nil || len(leases) == 0 {
			return err
		}
		for _, l := range leases {
			ids <- l.Task.ID()
			if err := s.Complete(ctx, l); err != nil {
				return err
			}
		}
	}
}

// checkOnce fails unless ids holds each of the tasks exactly once.
func checkOnce(t *testing.T, ids []string, tasks []rollout.RolloutTask) {
	t.Helper()
	seen := map[string]int{}
	for _, id := range ids {
		seen[id]++
	}
	for _, task := range tasks {
		if got := seen[task.ID()]; got != 1 {
			t.Errorf("task %s claimed %d times, want 1", task.ID(), got)
		}
	}
	if len(seen) != len(tasks) {
		t.Errorf("%d distinct tasks claimed, want %d", len(seen), len(tasks))
	}
}

// TestTwoStoresOneFile has two Stores on one file, as two processes would
// have, claim concurrently: SQLite's locks, not the Store's own write
// connection, keep them apart.
func TestTwoStoresOneFile(t *testing.T) {
	path := tempPath(t)
	a, b := MustOpen(t, path), MustOpen(t, path)
	c := storetest.Context(t)
	if err := a.CreateRun(c, store.RunRecord{ID: "r", Version: store.RunRecordVersion, Config: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	tasks := storetest.Tasks("r", 300)
	if err := a.Enqueue(c, "r", tasks); err != nil {
		t.Fatal(err)
	}
	ids := make(chan string, 2*len(tasks))
	errc := make(chan error, 8)
	var wg sync.WaitGroup
	for i := range 8 {
		s := []*sqlite.Store{a, b}[i%2]
		wg.Go(func() { errc <- drain(c, s, "r", fmt.Sprint("w", i), ids) })
	}
	wg.Wait()
	close(errc)
	close(ids)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for id := range ids {
		got = append(got, id)
	}
	checkOnce(t, got, tasks)
	for name, s := range map[string]*sqlite.Store{"a": a, "b": b} {
		if n, err := s.Counts(c, "r"); err != nil || n != (store.QueueCounts{Done: len(tasks)}) {
			t.Errorf("Counts through store %s = %+v, %v; want all %d done", name, n, err, len(tasks))
		}
	}
}

// TestWaitingClaimSeesAnotherStoresTasks: a claimer waiting in one Store
// gets a task another Store (another process) enqueues, by polling.
func TestWaitingClaimSeesAnotherStoresTasks(t *testing.T) {
	path := tempPath(t)
	a, b := MustOpen(t, path), MustOpen(t, path)
	c := storetest.Context(t)
	type result struct {
		leases []store.Lease
		err    error
	}
	done := make(chan result, 1)
	go func() {
		l, err := a.Claim(c, store.ClaimRequest{Run: "r", Worker: "w", Max: 1, Lease: time.Minute, Wait: 30 * time.Second})
		done <- result{l, err}
	}()
	if err := b.Enqueue(c, "r", storetest.Tasks("r", 1)); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || len(r.leases) != 1 {
		t.Errorf("waiting Claim = %v, %v; want the task the other store enqueued", r.leases, r.err)
	}
}

func TestConcurrentOpensOfANewFile(t *testing.T) {
	path := tempPath(t)
	const n = 4
	errc := make(chan error, n)
	stores := make(chan *sqlite.Store, n)
	for range n {
		go func() {
			s, err := sqlite.Open(context.Background(), path)
			if err == nil {
				stores <- s
			}
			errc <- err
		}()
	}
	for range n {
		if err := <-errc; err != nil {
			t.Errorf("Open: %v", err)
		}
	}
	close(stores)
	for s := range stores {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
	db := rawDB(t, path)
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v != sqlite.SchemaVersion() {
		t.Errorf("user_version = %d, %v; want %d", v, err, sqlite.SchemaVersion())
	}
}

// rawDB opens path with the driver alone, closed when the test ends.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// rawExec runs stmts on path with the driver alone and closes it.
func rawExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// newStore creates a store at path with a run in it and closes it.
func newStore(t *testing.T, path string) {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateRun(context.Background(), store.RunRecord{ID: "r", Version: 1, Config: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOpenCreatesTheDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs", "x", "store.db")
	MustOpen(t, path)
	if _, err := os.Stat(path); err != nil {
		t.Error(err)
	}
}

// TestStatsKeepNilEmptyAndNaN: the arrays' nil and empty slices and the
// means' NaN come back as they were put.
func TestStatsKeepNilEmptyAndNaN(t *testing.T) {
	s := MustOpen(t, tempPath(t))
	c := storetest.Context(t)
	stats := []rollout.QueryStats{
		{QueryID: "nil", MainRewards: nil, D: nil, SubRewards: nil},
		{QueryID: "empty", MainRewards: []float64{}, D: []int{}, SubRewards: []float64{}},
		{QueryID: "values", MainRewards: []float64{math.Inf(1), -0.5, math.MaxFloat64}, D: []int{-1, math.MaxInt, 0},
			SubRewards: []float64{math.SmallestNonzeroFloat64}, MainMean: math.Inf(-1), SubStd: 1e-300},
	}
	if err := s.PutStats(c, "r", 3, stats); err != nil {
		t.Fatal(err)
	}
	got, err := s.StepStats(c, "r", 3)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, stats) {
		t.Errorf("StepStats = %#v, want %#v", got, stats)
	}
	nan := []rollout.QueryStats{{QueryID: "nan", MainMean: math.NaN(), MainRewards: []float64{math.NaN()}}}
	if err := s.PutStats(c, "r", 4, nan); err != nil {
		t.Fatal(err)
	}
	if got, err := s.StepStats(c, "r", 4); err != nil || len(got) != 1 || !math.IsNaN(got[0].MainMean) || !math.IsNaN(got[0].MainRewards[0]) {
		t.Errorf("StepStats of NaNs = %+v, %v", got, err)
	}
	if err := s.PutStats(c, "r", 5, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := s.StepStats(c, "r", 5); err != nil || len(got) != 0 {
		t.Errorf("StepStats after PutStats of none = %v, %v; want none and no error", got, err)
	}
}

func TestCompletingADeadTask(t *testing.T) {
	s := MustOpen(t, tempPath(t))
	c := storetest.Context(t)
	if err := s.Enqueue(c, "r", storetest.Tasks("r", 1)); err != nil {
		t.Fatal(err)
	}
	req := store.ClaimRequest{Run: "r", Worker: "w", Max: 1, Lease: time.Millisecond, MaxAttempts: 1}
	leases, err := s.Claim(c, req)
	if err != nil || len(leases) != 1 {
		t.Fatalf("Claim = %v, %v", leases, err)
	}
	eventually(t, "the task is dead-lettered", func() bool {
		if _, err := s.Claim(c, req); err != nil {
			t.Fatal(err)
		}
		n, err := s.Counts(c, "r")
		return err == nil && n.Dead == 1
	})
	if err := s.Complete(c, leases[0]); err != nil {
		t.Fatalf("Complete of a dead-lettered task: %v", err)
	}
	if n, err := s.Counts(c, "r"); err != nil || n != (store.QueueCounts{Done: 1}) {
		t.Errorf("Counts = %+v, %v; want the task done, not dead", n, err)
	}
	if dead, err := s.DeadLetters(c, "r"); err != nil || len(dead) != 0 {
		t.Errorf("DeadLetters = %v, %v; want none", dead, err)
	}
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCacheSweep(t *testing.T) {
	path := tempPath(t)
	s := MustOpen(t, path, sqlite.WithCacheSweepInterval(10*time.Millisecond))
	c := storetest.Context(t)
	for _, k := range []string{"a", "b", "c"} {
		if err := s.Set(c, k, []byte(k), time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Set(c, "kept", nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	eventually(t, "the sweeper deletes expired entries", func() bool {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM cache`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	})
	if v, ok, err := s.Get(c, "kept"); err != nil || !ok || v == nil || len(v) != 0 {
		t.Errorf("Get of an empty value = %q, %v, %v; want an empty, non-nil value", v, ok, err)
	}
	if n, err := s.SweepCache(c); err != nil || n != 0 {
		t.Errorf("SweepCache with nothing expired = %d, %v", n, err)
	}
}

func TestClosedStore(t *testing.T) {
	path := tempPath(t)
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close twice: %v", err)
	}
	c := storetest.Context(t)
	_, err = s.Claim(c, store.ClaimRequest{Run: "r", Worker: "w", Max: 1, Lease: time.Second})
	if err == nil || !strings.Contains(err.Error(), "store closed") || !strings.Contains(err.Error(), path) {
		t.Errorf("Claim after Close: err %v, want it to say the store at %s is closed", err, path)
	}
	if _, _, err := s.Get(c, "k"); err == nil {
		t.Error("Get after Close succeeded")
	}
}

// TestCloseEndsAWaitingClaim: Close does not leave a claimer waiting.
func TestCloseEndsAWaitingClaim(t *testing.T) {
	s, err := sqlite.Open(context.Background(), tempPath(t))
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		close(started)
		_, err := s.Claim(context.Background(), store.ClaimRequest{Run: "r", Worker: "w", Max: 1, Lease: time.Second, Wait: time.Hour})
		errc <- err
	}()
	<-started
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err == nil {
		t.Error("a Claim waiting when the store closed returned no error")
	}
}

func TestClaimRequestIsChecked(t *testing.T) {
	s := MustOpen(t, tempPath(t))
	for _, tc := range []struct {
		name string
		req  store.ClaimRequest
		want string
	}{
		{"no max", store.ClaimRequest{Run: "r", Lease: time.Second}, "max 0 < 1"},
		{"no lease", store.ClaimRequest{Run: "r", Max: 1}, "lease 0s ≤ 0"},
		{"negative attempts", store.ClaimRequest{Run: "r", Max: 1, Lease: time.Second, MaxAttempts: -1}, "max attempts -1 < 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Claim(storetest.Context(t), tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Claim(%+v): err %v, want %q", tc.req, err, tc.want)
			}
		})
	}
}

func TestErrorsNameTheFile(t *testing.T) {
	path := tempPath(t)
	s := MustOpen(t, path)
	_, err := s.Run(storetest.Context(t), "missing")
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("Run of a missing run: err %v, want ErrNotFound naming %s and the run", err, path)
	}
	l := store.Lease{Task: storetest.Tasks("r", 1)[0], Handle: "junk"}
	if _, err := s.Extend(storetest.Context(t), l, time.Second); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("Extend of a foreign handle: err %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(storetest.Context(t), l); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Complete of a foreign handle: err %v, want ErrNotFound", err)
	}
}

// TestScanResultsPages: a step of more results than one page (and an
// empty task id) is scanned whole, each result once.
func TestScanResultsPages(t *testing.T) {
	s := MustOpen(t, tempPath(t))
	c := storetest.Context(t)
	want := map[string]bool{"": true}
	if err := s.PutResult(c, "r", 1, "", []byte(`0`)); err != nil {
		t.Fatal(err)
	}
	for i := range 600 {
		id := fmt.Sprintf("r/1/q%d/%d", i/8, i%8)
		want[id] = true
		if err := s.PutResult(c, "r", 1, id, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{}
	if err := s.ScanResults(c, "r", 1, func(id string, _ json.RawMessage) error {
		seen[id]++
		// fn may use the store: no connection is held while it runs.
		_, err := s.CountResults(c, "r", 1)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("result %q seen %d times, want 1", id, seen[id])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("ScanResults saw %d results, want %d", len(seen), len(want))
	}
}
