// Package trainertest holds what every trainer backend's tests share: a
// builder of realistic batches (aligned executor entries with duplicates,
// borrowed entries and padding) and the conformance suite Run.
package trainertest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// BatchSpec describes a synthetic step. Zero fields take small defaults
// (4 queries, K = 4, d̄ = 3, sequences of 40 to 80 tokens).
type BatchSpec struct {
	Run           string
	Step          int
	PolicyVersion int64
	// Queries is the number of queries; the last one has no executor
	// trajectory in any rollout, so its executor entries are padding.
	Queries int
	// K is the group size, DBar the aligned executor entries per rollout.
	K, DBar int
	// MeanD is the mean number of executor trajectories per rollout,
	// drawn from a Poisson distribution (0: DBar/2). The paper chooses d̄
	// near the 0.99 quantile of d, so most rollouts are padded by
	// duplicates.
	MeanD float64
	// MinTokens and MaxTokens bound each sequence's length.
	MinTokens, MaxTokens int
	// Generated is the fraction of tokens with loss mask 1 (0: 0.3).
	Generated float64
	// Seed seeds the tokens, rewards and the alignment.
	Seed uint64
}

func (s BatchSpec) withDefaults() BatchSpec {
	if s.Run == "" {
		s.Run = "conformance"
	}
	if s.Queries == 0 {
		s.Queries = 4
	}
	if s.K == 0 {
		s.K = 4
	}
	if s.DBar == 0 {
		s.DBar = 3
	}
	if s.MinTokens == 0 {
		s.MinTokens = 40
	}
	if s.MaxTokens < s.MinTokens {
		s.MaxTokens = 2 * s.MinTokens
	}
	if s.MeanD == 0 {
		s.MeanD = float64(s.DBar) / 2
	}
	if s.Generated == 0 {
		s.Generated = 0.3
	}
	return s
}

// Batches builds the planner and the executor batch of one synthetic
// step through the rollout package's group processing and sample building,
// so duplicated executor entries share their original's token slices as
// the farm's do. The samples are valid (see rollout.Sequence.Validate).
func Batches(spec BatchSpec) (planner, executor trainerbridge.Batch, err error) {
	s := spec.withDefaults()
	rng := rand.New(rand.NewPCG(s.Seed, 0x7e57))
	b := rollout.SampleBuilder{Run: s.Run, Step: s.Step, PadTokenID: 0, PadPolicyVersion: s.PolicyVersion, ShareTokens: true}
	cfg := rollout.GroupConfig{Mode: rollout.ModeMGRPO, DBar: s.DBar, RunSeed: s.Seed, Step: s.Step}
	planner = trainerbridge.Batch{Run: s.Run, Role: rollout.RolePlanner, Step: s.Step, PolicyVersion: s.PolicyVersion}
	executor = trainerbridge.Batch{Run: s.Run, Role: rollout.RoleExecutor, Step: s.Step, PolicyVersion: s.PolicyVersion}
	for q := range s.Queries {
		id := fmt.Sprintf("q%04d", q)
		in := rollout.GroupInput{QueryID: id}
		tr := rollout.GroupTrajectories{}
		for range s.K {
			d := poisson(rng, s.MeanD)
			if q == s.Queries-1 {
				d = 0
			}
			rr := rollout.RolloutRewards{Main: float64(rng.IntN(2))}
			var execs []rollout.Trajectory
			for range d {
				rr.Subs = append(rr.Subs, math.Round(rng.Float64()*1e4)/1e4)
				execs = append(execs, trajectory(rng, s))
			}
			in.Rollouts = append(in.Rollouts, rr)
			tr.Planner = append(tr.Planner, trajectory(rng, s))
			tr.Executors = append(tr.Executors, execs)
		}
		res, err := rollout.ProcessGroup(cfg, in)
		if err != nil {
			return planner, executor, err
		}
		p, e, err := b.Build(res, tr)
		if err != nil {
			return planner, executor, err
		}
		planner.Samples = append(planner.Samples, p...)
		executor.Samples = append(executor.Samples, e...)
	}
	return planner, executor, nil
}

// MustBatches is Batches failing tb on an error.
func MustBatches(tb testing.TB, spec BatchSpec) (planner, executor trainerbridge.Batch) {
	tb.Helper()
	p, e, err := Batches(spec)
	if err != nil {
		tb.Fatalf("build batches: %v", err)
	}
	return p, e
}

// poisson draws from the Poisson distribution of mean lambda (Knuth's
// method; lambda is small).
func poisson(rng *rand.Rand, lambda float64) int {
	limit, p, k := math.Exp(-lambda), 1.0, 0
	for {
		p *= rng.Float64()
		if p <= limit {
			return k
		}
		k++
	}
}

// trajectory returns one trajectory of one sequence: a prompt, then
// generated tokens with logprobs of six decimals (as samplers report
// them), with masked tool output in between. Token ids follow a long-tailed
// distribution over a 151k vocabulary, frequent tokens having small ids as
// in BPE vocabularies.
func trajectory(rng *rand.Rand, s BatchSpec) rollout.Trajectory {
	n := s.MinTokens + rng.IntN(s.MaxTokens-s.MinTokens+1)
	seq := rollout.Sequence{InputIDs: make([]int32, n), LossMask: make([]int8, n)}
	for i := range n {
		seq.InputIDs[i] = int32(int(rng.ExpFloat64()*8000) % 151_000)
		if i > 0 && rng.Float64() < s.Generated {
			seq.LossMask[i] = 1
			seq.Logprobs = append(seq.Logprobs, -math.Round(rng.ExpFloat64()*1e6*0.3)/1e6)
		}
	}
	finish := "stop"
	if rng.IntN(10) == 0 {
		finish = "length"
	}
	turns := 1 + rng.IntN(6)
	// One sample holds every turn: tool-call turns, then the last.
	seq.TurnFinishReasons = make([]string, turns)
	for i := range turns - 1 {
		seq.TurnFinishReasons[i] = "tool_calls"
	}
	seq.TurnFinishReasons[turns-1] = finish
	return rollout.Trajectory{Sequences: []rollout.Sequence{seq}, PolicyVersion: s.PolicyVersion, NumTurns: turns, FinishReason: finish, FormatOK: rng.IntN(8) != 0}
}
