// Package store defines the shared store of a run: what the farm, its
// workers and the two training sides keep and exchange. It holds the run
// and step metadata, the per-query statistics, a work queue of rollout
// tasks with leases, the rollout results as each finishes, a tool-result
// cache with TTL and the current policy version per role.
//
// The interfaces here are split by concern (Runs, Stats, Queue, Results,
// Draws, Cache, Versions, Locks); a Store is all of them. Backends live in
// sub-packages (store/sqlite for one machine, embedded; store/redis across
// machines) and are chosen by URL scheme with store/backends.Open. Every
// backend runs the one conformance suite of store/storetest.
//
// The store imports the pure M-GRPO layer (package rollout) for its
// records and nothing above it: results travel as the farm's JSON, opaque
// here, so the farm can depend on the store and not the other way round.
//
// Every method takes a context, is safe for concurrent use by many
// goroutines and processes, and returns an error wrapping ErrNotFound when
// what it reads does not exist. Runs are separate namespaces: the same task
// id in two runs are two tasks.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
)

// Errors every backend returns (wrapped) for the same conditions.
var (
	// ErrNotFound: the run, step, record or entry does not exist.
	ErrNotFound = errors.New("not found")
	// ErrLeaseLost: the lease expired and was reclaimed, or the task was
	// completed under another lease; the holder must stop extending it.
	ErrLeaseLost = errors.New("lease lost")
	// ErrConflict: a record exists with other contents than a call that
	// must not replace it gave (a run created again with another
	// configuration).
	ErrConflict = errors.New("conflicts with the stored record")
	// ErrCorrupt: the stored data cannot be read (a damaged file, a key of
	// the wrong type). Backends report it and never overwrite what they
	// could not read.
	ErrCorrupt = errors.New("store data unreadable")
	// ErrClosed: the store was closed by this process.
	ErrClosed = errors.New("store closed")
	// ErrQueueLost: the run's work queue vanished under its record (a
	// backend whose queue lives apart from the record: Redis's stream
	// deleted, or its consumer group destroyed), so the tasks enqueued
	// can no longer be handed out or told apart.
	ErrQueueLost = errors.New("the run's work queue is gone")
)

// Store is a whole shared store. Close releases its connections; it is
// idempotent, and other methods fail after it.
type Store interface {
	Runs
	Stats
	Queue
	Results
	Draws
	Cache
	Versions
	Locks
	Close() error
}

// RunRecordVersion is the version of RunRecord's layout this code writes
// and reads. A worker given a run of another version refuses it.
const RunRecordVersion = 1

// RunRecord describes a run: what every worker needs to serve it.
type RunRecord struct {
	// ID names the run (rollout.Sample.Run).
	ID string `json:"id"`
	// Version is RunRecordVersion when written.
	Version int `json:"version"`
	// Config is the run's configuration as JSON, secrets excepted (keys
	// come from each process's environment).
	Config json.RawMessage `json:"config"`
	// Created is when the run was first created. It is kept to the
	// nanosecond and never changed by a later CreateRun, so it also marks
	// the run's incarnation: a run created anew (in a store that lost it)
	// has another Created, which its processes watch for.
	Created time.Time `json:"created"`
}

// StepStatus is where a step stands.
type StepStatus string

// The step statuses, in the order a step goes through them.
const (
	StepScheduled StepStatus = "scheduled" // its tasks are enqueued
	StepWritten   StepStatus = "written"   // its files are written
)

// StepRecord describes one step of a run.
type StepRecord struct {
	Step   int        `json:"step"`
	Status StepStatus `json:"status"`
	// Rollouts is the number of rollout tasks the step enqueued (B·K).
	Rollouts int `json:"rollouts"`
	// DBar is the step's d̄ once resolved (0 before, and without a sub
	// side).
	DBar int `json:"dbar"`
	// ObservedD are the step's d_k, one per rollout in plan order, once
	// written: a resumed run resolves the next step's auto d̄ from them.
	ObservedD []int `json:"observed_d,omitempty"`
	// Files names where the step's files are (a directory or URL), once
	// written: a trainer of one side reads its samples from there.
	Files string `json:"files,omitempty"`
	// Summary is the step's summary once written.
	Summary *rollout.StepSummary `json:"summary,omitempty"`
}

// Runs holds run and step metadata.
type Runs interface {
	// CreateRun stores r. It is idempotent: creating a run that exists
	// with the same Version and Config returns nil and keeps the stored
	// Created; one that exists with another Version or Config returns an
	// error wrapping ErrConflict.
	CreateRun(ctx context.Context, r RunRecord) error
	// Run returns the run called id (ErrNotFound when absent).
	Run(ctx context.Context, id string) (RunRecord, error)
	// RunIDs returns the ids of the store's runs, sorted (a worker started
	// without a run serves the only one).
	RunIDs(ctx context.Context) ([]string, error)
	// PutStep stores s as step s.Step of run, replacing an earlier record
	// of that step. The run must exist (ErrNotFound otherwise).
	PutStep(ctx context.Context, run string, s StepRecord) error
	// Steps returns the run's step records in step order (none: an empty
	// slice).
	Steps(ctx context.Context, run string) ([]StepRecord, error)
	// PutStepFile stores a file of step under name (replacing one stored
	// before), so a process on another machine can read it: the decoupled
	// training mode hands the executor samples over this way.
	PutStepFile(ctx context.Context, run string, step int, name string, data []byte) error
	// StepFile returns the file of step stored under name (ErrNotFound
	// when none is).
	StepFile(ctx context.Context, run string, step int, name string) ([]byte, error)
}

// Stats holds the per-query statistics of each step: what the planner and
// the executor sides exchange (main rewards per rollout, μ, σ, d_k, d̄,
// sub rewards, μ_S, σ_S).
type Stats interface {
	// PutStats stores the statistics of step, replacing any stored for
	// that step (idempotent).
	PutStats(ctx context.Context, run string, step int, stats []rollout.QueryStats) error
	// StepStats returns the statistics of step in the order they were put
	// (ErrNotFound when none were put).
	StepStats(ctx context.Context, run string, step int) ([]rollout.QueryStats, error)
}

// Lease is a claimed task: its holder runs it and then completes it, or
// extends the lease while it runs. A lease that expires goes back to the
// queue for any worker.
type Lease struct {
	Task rollout.RolloutTask
	// Worker is the claimer's name.
	Worker string
	// Attempt counts the claims of the task, this one included (1 for the
	// first).
	Attempt int
	// Expires is when the lease ends unless extended.
	Expires time.Time
	// Handle is the backend's own reference to the claim (a stream entry
	// id, a row version); callers pass the lease back unchanged.
	Handle string
}

// ClaimRequest says what a worker asks of the queue.
type ClaimRequest struct {
	Run string
	// Worker names the claimer (for its leases and for logs).
	Worker string
	// Max is the most tasks returned (at least 1).
	Max int
	// Lease is how long each claimed task is held before it can be
	// reclaimed (> 0).
	Lease time.Duration
	// Wait is how long to wait for a task when none is available; 0
	// returns at once.
	Wait time.Duration
	// MaxAttempts dead-letters, instead of handing out again, a task whose
	// lease expired this many times (0: never).
	MaxAttempts int
}

// DeadTask is a task that ran out of attempts.
type DeadTask struct {
	Task     rollout.RolloutTask
	Attempts int
	// LastWorker is the worker whose lease expired last.
	LastWorker string
}

// QueueCounts are the sizes of a run's queue.
type QueueCounts struct {
	// Pending tasks wait to be claimed (expired leases included).
	Pending int
	// Leased tasks are held under an unexpired lease.
	Leased int
	// Done tasks were completed; Dead were dead-lettered.
	Done, Dead int
}

// Queue is the work queue of rollout tasks with leases. Tasks are
// identified by rollout.RolloutTask.ID; each is completed exactly once.
type Queue interface {
	// Enqueue adds tasks to run's queue. It is idempotent by task id: a
	// task already enqueued (pending, leased, done or dead) is left as it
	// is.
	Enqueue(ctx context.Context, run string, tasks []rollout.RolloutTask) error
	// Claim leases up to r.Max tasks: pending ones first in enqueue
	// order, then tasks whose leases expired (those that reached
	// r.MaxAttempts are dead-lettered instead). With none available it
	// waits up to r.Wait, then returns an empty slice and no error.
	Claim(ctx context.Context, r ClaimRequest) ([]Lease, error)
	// Extend moves l's expiry to now + d and returns the renewed lease.
	// It fails with ErrLeaseLost when l is no longer held (expired and
	// claimed by another worker, or completed).
	Extend(ctx context.Context, l Lease, d time.Duration) (Lease, error)
	// Complete marks the task of l done. It is idempotent by task id:
	// completing a task already done returns nil, whoever completed it,
	// and a task whose expired lease was reclaimed may still be completed
	// by its first holder (its result is as good as a later one). A
	// dead-lettered task completed by a late holder leaves the dead
	// letters and counts as done.
	Complete(ctx context.Context, l Lease) error
	// Counts returns the sizes of run's queue. It and Claim fail with
	// ErrQueueLost when the queue of tasks once enqueued is gone.
	Counts(ctx context.Context, run string) (QueueCounts, error)
	// DeadLetters returns run's dead-lettered tasks in the order they died.
	DeadLetters(ctx context.Context, run string) ([]DeadTask, error)
}

// Results holds rollout results, written as each rollout finishes, so a
// step is assembled from the store instead of from memory. A result is the
// farm's JSON of one rollout, opaque to the store.
type Results interface {
	// PutResult stores the result of task taskID of step. It is idempotent
	// by task id: the first result stored for a task is kept and later
	// ones are ignored (a rollout redone after a lost lease yields the
	// same result from the same seed).
	PutResult(ctx context.Context, run string, step int, taskID string, result json.RawMessage) error
	// Result returns the result of task taskID of step (ErrNotFound when
	// none was stored), so a step can be assembled one query at a time.
	Result(ctx context.Context, run string, step int, taskID string) (json.RawMessage, error)
	// ScanResults calls fn with every result of step, in no particular
	// order, stopping at fn's first error (returned). Results stored while
	// it runs may or may not be seen.
	ScanResults(ctx context.Context, run string, step int, fn func(taskID string, result json.RawMessage) error) error
	// CountResults returns how many results step holds.
	CountResults(ctx context.Context, run string, step int) (int, error)
	// DeleteResults removes step's results once its files are written
	// (idempotent).
	DeleteResults(ctx context.Context, run string, step int) error
}

// Draws holds the draws of streamed runs, under keys of their own (a
// draw's number never meets a step's). A draw is one query's group of
// rollouts, numbered from 1 in the order the run started them; the step
// that trains it names it in its manifest (a step file). Records and
// results are the farm's JSON, opaque to the store.
type Draws interface {
	// PutDraw stores the record of draw n (what its start leaves for a
	// resumed run), replacing one stored before (idempotent). The run
	// need not exist.
	PutDraw(ctx context.Context, run string, n int, record []byte) error
	// Draw returns the record of draw n (ErrNotFound when none was put).
	Draw(ctx context.Context, run string, n int) ([]byte, error)
	// PutDrawResult stores the result of task taskID of draw n. It is
	// idempotent by task id: the first result stored is kept.
	PutDrawResult(ctx context.Context, run string, n int, taskID string, result json.RawMessage) error
	// DrawResult returns the result of task taskID of draw n (ErrNotFound
	// when none was stored).
	DrawResult(ctx context.Context, run string, n int, taskID string) (json.RawMessage, error)
	// ScanDrawResults calls fn with every result of draw n, in no
	// particular order, stopping at fn's first error (returned).
	ScanDrawResults(ctx context.Context, run string, n int, fn func(taskID string, result json.RawMessage) error) error
	// DeleteDrawResults removes draw n's results once the step holding it
	// is written; its record stays (idempotent).
	DeleteDrawResults(ctx context.Context, run string, n int) error
}

// Cache is the tool-result cache shared by every worker of a run (and by
// runs pointed at the same store). Its methods are those of
// tools/cache.Cache, so a Store serves as the tools' cache as it is.
type Cache interface {
	// Get returns the value stored under key and true, or nil and false
	// when the key is absent or expired. An error means the backend failed;
	// callers treat it as a miss.
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// Set stores value under key for ttl (ttl ≤ 0: DefaultCacheTTL),
	// replacing any previous value. It is idempotent.
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// DefaultCacheTTL is how long a cache entry lives when Set is given no TTL.
const DefaultCacheTTL = 7 * 24 * time.Hour

// Versions holds the current policy version of each role (planner,
// executor) of a run, as its trainer last published it.
type Versions interface {
	// SetPolicyVersion records v as role's current version. Versions only
	// move forward: a v lower than the stored one is ignored (a late
	// publisher cannot roll a role back).
	SetPolicyVersion(ctx context.Context, run, role string, v int64) error
	// PolicyVersion returns role's current version, 0 when none was set.
	PolicyVersion(ctx context.Context, run, role string) (int64, error)
}
