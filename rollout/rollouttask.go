package rollout

import (
	"encoding/binary"
	"hash/fnv"
	"net/url"
	"strconv"
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
	// PolicyVersion is the version of the planner's (the single agent's)
	// policy the rollout is sampled with, ExecutorPolicyVersion the
	// executors': the two models are trained apart and may differ. Both
	// are read when the rollout is scheduled.
	PolicyVersion         int64 `json:"policy_version"`
	ExecutorPolicyVersion int64 `json:"executor_policy_version,omitempty"`
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
