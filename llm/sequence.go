package llm

import (
	"errors"
	"fmt"
)

// Sequence is one training sequence assembled from consecutive turns of a
// trajectory.
type Sequence struct {
	// InputIDs are the token ids: the first turn's prompt, then for each
	// turn its completion and the next prompt's new tokens.
	InputIDs []int32
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
// not modify the turns; a sequence's InputIDs may be the array the client
// placed the last turn's ids in (see PromptPrefix), shared with the turns,
// so treat them as read-only.
func Sequences(turns []*Turn) ([]Sequence, []Drift, error) {
	var (
		seqs   []Sequence
		drifts []Drift
		first  int // the first turn of the sequence being gathered
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
		if i == 0 {
			continue
		}
		if at, ok := extends(t.PromptIDs, turns[i-1]); !ok {
			drifts = append(drifts, Drift{Turn: i, At: at})
			seqs = append(seqs, mergeTurns(turns[first:i], first))
			first = i
		}
	}
	if len(turns) > 0 {
		seqs = append(seqs, mergeTurns(turns[first:], first))
	}
	return seqs, drifts, nil
}

// extends reports whether prompt starts with prev's prompt and completion
// ids, and where they first differ. Ids the client placed in one array
// (see PromptPrefix) are the same memory and need no comparing.
func extends(prompt []int32, prev *Turn) (at int, ok bool) {
	pp, pc := prev.PromptIDs, prev.CompletionIDs
	n := len(pp) + len(pc)
	if len(prompt) >= n && &prompt[0] == &pp[0] && &prompt[len(pp)] == &pc[0] {
		return n, true
	}
	at = commonPrefix(pp, prompt)
	if at < len(pp) {
		return at, false
	}
	at += commonPrefix(pc, prompt[len(pp):])
	return at, at == n
}

// mergeTurns returns the sequence of run, turns that each extend the one
// before: the last turn's prompt and completion, with mask 1 and the
// sampler's logprobs on every turn's completion. Each turn's prompt is a
// prefix of the sequence, so its completion sits right after it.
func mergeTurns(run []*Turn, first int) Sequence {
	last := run[len(run)-1]
	ids := last.contiguous()
	n := len(last.PromptIDs) + len(last.CompletionIDs)
	if ids == nil {
		ids = make([]int32, n)
		copy(ids, last.PromptIDs)
		copy(ids[len(last.PromptIDs):], last.CompletionIDs)
	}
	mask := make([]int8, n)
	logprobs := make([]float64, n)
	for _, t := range run {
		at := len(t.PromptIDs)
		m := mask[at : at+len(t.CompletionIDs)]
		for j := range m {
			m[j] = 1
		}
		copy(logprobs[at:], t.Logprobs)
	}
	return Sequence{InputIDs: ids, LossMask: mask, Logprobs: logprobs, FirstTurn: first, NumTurns: len(run)}
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
