package rollout

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
)

// SubRef names one executor trajectory of a query: the rollout k it belongs
// to and its sub_index (the order of its delegation within that rollout).
type SubRef struct {
	Rollout  int `json:"rollout" parquet:"rollout"`
	SubIndex int `json:"sub_index" parquet:"sub_index"`
}

// SubSlot is one of the d̄ aligned executor entries of a rollout.
type SubSlot struct {
	// Rollout is k of the rollout the entry is counted for.
	Rollout int
	// SubIndex is the entry's sub_index within Rollout: the original index for
	// a kept trajectory, d_k, d_k+1, … for a duplicate, 0…d̄−1 for an entry
	// borrowed or padded in a rollout without executors.
	SubIndex int
	// Source is the trajectory whose tokens and reward fill the entry; for a
	// kept original it equals {Rollout, SubIndex}. Unset for padding.
	Source SubRef
	// Duplicate is true for a copy of a trajectory, from the same rollout or
	// borrowed (then Source names the original).
	Duplicate bool
	// Borrowed is true when Source is another rollout's trajectory, which only
	// happens for rollouts without executors (the d_k = 0 rule).
	Borrowed bool
	// Padding is true for an entry of a query in which no rollout has an
	// executor trajectory.
	Padding bool
}

// AlignSeed returns the two PCG seed words for aligning query queryID at step
// step of a run with seed runSeed: the run seed itself, and the 64-bit FNV-1a
// hash of the step as 8 big-endian bytes followed by the query id.
func AlignSeed(runSeed uint64, step int, queryID string) (uint64, uint64) {
	h := fnv.New64a()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(step))
	h.Write(b[:])
	h.Write([]byte(queryID))
	return runSeed, h.Sum64()
}

// Alignment is the result of aligning one query's executor trajectories.
type Alignment struct {
	// Slots holds exactly len(d)·dbar entries, rollout after rollout, each
	// rollout's kept originals first (ascending sub_index) and then its
	// duplicates in the order drawn.
	Slots []SubSlot
	// Dropped counts trajectories left out because d_k > d̄.
	Dropped int
	// Duplicates counts duplicate entries, borrowed ones included.
	Duplicates int
	// Borrowed counts entries borrowed under the d_k = 0 rule.
	Borrowed int
	// Padding counts padding entries.
	Padding int
}

// Align maps the executor trajectories of a query's rollouts, d[k] of them in
// rollout k, onto exactly dbar entries per rollout following the rules in the
// package documentation. rng supplies every random choice; rollouts are
// handled in order of k, so the same generator state gives the same result.
func Align(d []int, dbar int, rng *rand.Rand) (Alignment, error) {
	if dbar < 1 {
		return Alignment{}, fmt.Errorf("align: dbar = %d, want ≥ 1", dbar)
	}
	total := 0
	for k, n := range d {
		if n < 0 {
			return Alignment{}, fmt.Errorf("align: rollout %d has %d executor trajectories", k, n)
		}
		total += n
	}
	a := Alignment{Slots: make([]SubSlot, 0, len(d)*dbar)}
	if total == 0 {
		for k := range d {
			for s := range dbar {
				a.Slots = append(a.Slots, SubSlot{Rollout: k, SubIndex: s, Padding: true})
			}
		}
		a.Padding = len(d) * dbar
		return a, nil
	}
	for k, n := range d {
		switch {
		case n == 0:
			pool := make([]SubRef, 0, total)
			for j, m := range d {
				if j == k {
					continue
				}
				for i := range m {
					pool = append(pool, SubRef{Rollout: j, SubIndex: i})
				}
			}
			for s, pick := range drawRounds(rng, len(pool), dbar) {
				a.Slots = append(a.Slots, SubSlot{Rollout: k, SubIndex: s, Source: pool[pick], Duplicate: true, Borrowed: true})
			}
			a.Duplicates += dbar
			a.Borrowed += dbar
		case n > dbar:
			idx := make([]int, n)
			for i := range idx {
				idx[i] = i
			}
			// Partial Fisher–Yates: the first dbar positions become a uniform
			// random subset.
			for i := range dbar {
				j := i + rng.IntN(n-i)
				idx[i], idx[j] = idx[j], idx[i]
			}
			kept := idx[:dbar]
			slices.Sort(kept)
			for _, i := range kept {
				a.Slots = append(a.Slots, original(k, i))
			}
			a.Dropped += n - dbar
		default:
			for i := range n {
				a.Slots = append(a.Slots, original(k, i))
			}
			for s, pick := range drawRounds(rng, n, dbar-n) {
				a.Slots = append(a.Slots, SubSlot{Rollout: k, SubIndex: n + s, Source: SubRef{Rollout: k, SubIndex: pick}, Duplicate: true})
			}
			a.Duplicates += dbar - n
		}
	}
	return a, nil
}

// original returns the slot of rollout k's kept trajectory i.
func original(k, i int) SubSlot {
	return SubSlot{Rollout: k, SubIndex: i, Source: SubRef{Rollout: k, SubIndex: i}}
}

// drawRounds returns count indices in [0, n), drawn in rounds: each round is
// a fresh uniform permutation of [0, n), so every index is drawn once before
// any is drawn again. n must be ≥ 1 when count > 0.
func drawRounds(rng *rand.Rand, n, count int) []int {
	out := make([]int, 0, count)
	for len(out) < count {
		perm := rng.Perm(n)
		out = append(out, perm[:min(n, count-len(out))]...)
	}
	return out
}
