package rollout

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"net/url"
	"strconv"

	"github.com/mgrpo/mgrpo/agents"
)

// RolloutTask is the farm's unit of work: rollout K of query QueryID at step
// Step of run Run. It is a plain value, so it can be queued in a shared
// store and handed to a worker on another machine; everything a worker
// needs besides the task itself (the question and gold answer) is looked up
// by QueryID.
type RolloutTask struct {
	Run     string `json:"run"`
	Step    int    `json:"step"`
	QueryID string `json:"query_id"`
	// K is the rollout's index within its query's group, 0 ≤ K < group size.
	K int `json:"k"`
	// Seed is the rollout's own seed (see RolloutSeed); every trajectory and
	// turn of the rollout samples with a seed derived from it.
	Seed int64 `json:"seed"`
	// PolicyVersion is the version of the policy the rollout is sampled
	// with, read when the step was scheduled.
	PolicyVersion int64 `json:"policy_version"`
}

// ID returns the task's stable identifier "run/step/query/k", with the run
// and query id path-escaped so that the four parts can always be told
// apart. It is also the rollout's endpoint stickiness key.
func (t RolloutTask) ID() string {
	return url.PathEscape(t.Run) + "/" + strconv.Itoa(t.Step) + "/" + url.PathEscape(t.QueryID) + "/" + strconv.Itoa(t.K)
}

// RolloutSeed derives the seed of rollout k of query queryID at step step
// from the run seed: the 64-bit FNV-1a hash of the run seed, the step, the
// length of the query id, the query id and k (integers as 8 big-endian
// bytes), shifted right by one so that it is never negative.
func RolloutSeed(runSeed uint64, step int, queryID string, k int) int64 {
	h := fnv.New64a()
	var b [8]byte
	put := func(v uint64) {
		binary.BigEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	put(runSeed)
	put(uint64(step))
	put(uint64(len(queryID)))
	h.Write([]byte(queryID))
	put(uint64(k))
	return int64(h.Sum64() >> 1)
}

// TrajectoryResult is what the farm derived from one agent trajectory of a
// rollout: its training sequences and how many chat-template drift events
// split them. SequenceError records turns that could not be assembled into
// sequences; such a trajectory has no sequences (it yields no sample) and
// its format counts as invalid.
type TrajectoryResult struct {
	Sequences     []Sequence `json:"sequences"`
	Drifts        int        `json:"drifts"`
	SequenceError string     `json:"sequence_error,omitempty"`

	// validated records that trajectorySequences checked every sequence
	// in this process, so sample building need not check them again. It
	// does not travel: a result decoded from elsewhere is checked.
	validated bool
}

// RolloutResult is the outcome of one RolloutTask: the rollout tree, its
// scores and the token sequences of its trajectories. Like the task it is a
// plain serialisable value, so results can be produced by workers and
// assembled into steps elsewhere; grouping and advantages happen only once
// every result of a step is in.
type RolloutResult struct {
	Task RolloutTask `json:"task"`
	// Tree is the rollout as the agents produced it, except that its turns'
	// prompt token ids are dropped once Planner and Executors hold them (see
	// Execute); never nil (a runner that returned nothing gets a tree whose
	// planner records the error).
	Tree *agents.Rollout `json:"tree"`
	// Scores are the rollout's rewards and the verdicts behind them.
	Scores RolloutScores `json:"scores"`
	// Planner holds the planner's (or single agent's) sequences, Executors
	// those of Tree.Executors in delegation order.
	Planner   TrajectoryResult   `json:"planner"`
	Executors []TrajectoryResult `json:"executors"`
	// Error is why the rollout failed (the planner's error, a runner panic,
	// planner turns that form no sequences); empty for a rollout that ran to
	// its end. A failed rollout is scored 0 with invalid format.
	Error string `json:"error,omitempty"`
}

// Failed reports whether the rollout failed.
func (r *RolloutResult) Failed() bool { return r.Error != "" }

// trajectories returns the planner trajectory followed by the executors.
func (r *RolloutResult) trajectories() []*agents.Trajectory {
	return append([]*agents.Trajectory{r.Tree.Planner}, r.Tree.Executors...)
}

// describe names a result in errors and logs.
func (r *RolloutResult) describe() string {
	return fmt.Sprintf("rollout %s", r.Task.ID())
}
