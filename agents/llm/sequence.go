package llm

import (
	"errors"
	"fmt"
	"slices"
)

// Sequence is one training sequence assembled from consecutive turns of a
// trajectory.
type Sequence struct {
	// InputIDs are the token ids: the first turn's prompt, then for each
	// turn its completion and the next prompt's new tokens.
	InputIDs []int
	// LossMask is 1 exactly on the tokens the engine sampled, 0 elsewhere.
	LossMask []int8
	// Logprobs are the sampler's logprobs aligned with InputIDs; 0 where
	// LossMask is 0.
	Logprobs []float64
	// FirstTurn is the index of the first turn in the sequence, NumTurns
	// how many turns it holds.
	FirstTurn int
	NumTurns  int
}

// Drift records a turn whose prompt did not extend the previous turn's
// prompt and completion, so a new sequence started at it.
type Drift struct {
	// Turn is the index of the turn that started the new sequence.
	Turn int
	// At is the first position where the prompt and the previous tokens
	// differ (the length of the common prefix).
	At int
}

// ErrNoTokenData is returned by Sequences for a turn without token ids or
// with a logprob count that differs from its completion length.
var ErrNoTokenData = errors.New("turn has no usable token data")

// Sequences turns a trajectory's turns into training sequences. Consecutive
// turns merge when the later prompt's ids start with the earlier prompt plus
// completion ids; otherwise a new sequence starts and a Drift names the
// turn. Nil turns are an error; so is a turn without token data. It does
// not modify the turns.
func Sequences(turns []*Turn) ([]Sequence, []Drift, error) {
	var (
		seqs   []Sequence
		drifts []Drift
		cur    *Sequence
	)
	for i, t := range turns {
		if t == nil {
			return nil, nil, fmt.Errorf("turn %d: %w: nil turn", i, ErrNoTokenData)
		}
		if !t.HasTokens() {
			return nil, nil, fmt.Errorf("turn %d: %w: %d prompt ids, %d completion ids", i, ErrNoTokenData, len(t.PromptIDs), len(t.CompletionIDs))
		}
		if len(t.Logprobs) != len(t.CompletionIDs) {
			return nil, nil, fmt.Errorf("turn %d: %w: %d logprobs for %d completion ids", i, ErrNoTokenData, len(t.Logprobs), len(t.CompletionIDs))
		}
		if cur != nil {
			n := commonPrefix(cur.InputIDs, t.PromptIDs)
			if n == len(cur.InputIDs) {
				appendSpan(cur, t.PromptIDs[n:], nil)
				appendSpan(cur, t.CompletionIDs, t.Logprobs)
				cur.NumTurns++
				continue
			}
			drifts = append(drifts, Drift{Turn: i, At: n})
		}
		seqs = append(seqs, Sequence{FirstTurn: i, NumTurns: 1})
		cur = &seqs[len(seqs)-1]
		// Sized for the whole trajectory: without drift, the last turn's
		// prompt and completion are exactly the merged sequence.
		size := len(t.PromptIDs) + len(t.CompletionIDs)
		if last := turns[len(turns)-1]; last != nil {
			size = max(size, len(last.PromptIDs)+len(last.CompletionIDs))
		}
		cur.InputIDs = make([]int, 0, size)
		cur.LossMask = make([]int8, 0, size)
		cur.Logprobs = make([]float64, 0, size)
		appendSpan(cur, t.PromptIDs, nil)
		appendSpan(cur, t.CompletionIDs, t.Logprobs)
	}
	return seqs, drifts, nil
}

// appendSpan appends ids to s: sampled (mask 1, with logprobs) when lps is
// non-nil, context (mask 0, logprob 0) otherwise.
func appendSpan(s *Sequence, ids []int, lps []float64) {
	s.InputIDs = append(s.InputIDs, ids...)
	var m int8
	if lps != nil {
		m = 1
		s.Logprobs = append(s.Logprobs, lps...)
	} else {
		n := len(s.Logprobs)
		s.Logprobs = slices.Grow(s.Logprobs, len(ids))[:n+len(ids)]
		clear(s.Logprobs[n:])
	}
	n := len(s.LossMask)
	s.LossMask = slices.Grow(s.LossMask, len(ids))[:n+len(ids)]
	for i := n; i < len(s.LossMask); i++ {
		s.LossMask[i] = m
	}
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []int) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
