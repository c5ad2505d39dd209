package rollout

import (
	"fmt"
	"math"
)

// Role is the agent role a Sample trains.
type Role string

// The roles. In mode single the single agent's samples carry RolePlanner.
const (
	RolePlanner  Role = "planner"
	RoleExecutor Role = "executor"
)

// FinishReasonPadding is the finish_reason of padding samples.
const FinishReasonPadding = "padding"

// Sample is one training sequence for one role, the unit every trainer
// backend receives. Its JSON keys and their order are part of the file
// format.
type Sample struct {
	Run  string `json:"run" parquet:"run"`
	Step int    `json:"step" parquet:"step"`
	Role Role   `json:"role" parquet:"role"`
	// QueryID is the task id.
	QueryID string `json:"query_id" parquet:"query_id"`
	// Rollout is k, the rollout the entry is counted for.
	Rollout int `json:"rollout" parquet:"rollout"`
	// SubIndex is the executor entry's sub_index (see SubSlot); null for
	// planner samples.
	SubIndex *int `json:"sub_index" parquet:"sub_index,optional"`
	// DuplicateOf names the original trajectory of a duplicated or borrowed
	// executor entry; null otherwise.
	DuplicateOf *SubRef `json:"duplicate_of" parquet:"duplicate_of,optional"`
	// PolicyVersion is the version of the policy that sampled the tokens.
	PolicyVersion int64 `json:"policy_version" parquet:"policy_version"`
	// InputIDs, LossMask and Logprobs are aligned token by token; LossMask is
	// 1 on generated tokens, and Logprobs are the sampler's, 0 where the mask
	// is 0.
	InputIDs []int     `json:"input_ids" parquet:"input_ids,list"`
	LossMask []int8    `json:"loss_mask" parquet:"loss_mask,list"`
	Logprobs []float64 `json:"logprobs" parquet:"logprobs,list"`
	// Reward and Advantage apply to every generated token of the sample.
	Reward    float64 `json:"reward" parquet:"reward"`
	Advantage float64 `json:"advantage" parquet:"advantage"`
	NumTurns  int     `json:"num_turns" parquet:"num_turns"`
	// FinishReason is how the trajectory ended ("padding" for padding).
	FinishReason string `json:"finish_reason" parquet:"finish_reason"`
	FormatOK     bool   `json:"format_ok" parquet:"format_ok"`
	// FirstTurn and SampleTurns say which turns of its trajectory the
	// sample holds: SampleTurns turns from turn FirstTurn on (NumTurns is
	// the trajectory's count, so a sample ending before NumTurns is one
	// piece of a split trajectory). Both are 0 for padding.
	FirstTurn   int `json:"first_turn" parquet:"first_turn"`
	SampleTurns int `json:"sample_turns" parquet:"sample_turns"`
	// TurnFinishReasons is each held turn's finish reason, in order:
	// "tool_calls" for a turn that called tools, else the engine's
	// ("stop", "length", "abort"); empty, never null, for padding.
	TurnFinishReasons []string `json:"turn_finish_reasons" parquet:"turn_finish_reasons,list"`
	// SplitReason is why the sample's first turn started a new sequence of
	// its trajectory (SplitHistoryEdit, SplitContextCut, SplitDrift); empty
	// for a trajectory's first sample.
	SplitReason string `json:"split_reason" parquet:"split_reason"`
}

// Why a trajectory was split into several samples (Sample.SplitReason).
const (
	// SplitHistoryEdit: the agent rewrote messages the model had already
	// seen (truncation, summarization, a changed system prompt), so the
	// sequence sampled so far does not continue.
	SplitHistoryEdit = "history_edit"
	// SplitContextCut: the context window forced a cut.
	SplitContextCut = "context_cut"
	// SplitDrift: the next prompt's tokens did not extend the previous
	// prompt and completion (a re-rendering broke the sequence); a bug
	// of the token path, always warned about.
	SplitDrift = "drift"
)

// Sequence is one token sequence of a trajectory with its loss mask, in
// the compact form a step holds until its samples are built: ids as the
// engines' 32-bit token ids, and logprobs for the sampled tokens only
// (a prompt token's logprob is 0 by definition). A step holds thousands of
// them at once; the wide form a Sample carries (8-byte ids, a logprob for
// every token) would take about 21 bytes a token instead of 5 to 6.
type Sequence struct {
	InputIDs []int32
	LossMask []int8
	// Logprobs are the sampler's logprobs of the tokens whose mask is 1,
	// in order: one for every 1 in LossMask.
	Logprobs []float64
	// FirstTurn is the index of the trajectory's first turn the sequence
	// holds; TurnFinishReasons has one finish reason per turn it holds.
	FirstTurn         int
	TurnFinishReasons []string
	// Split is why the sequence started anew at FirstTurn (SplitDrift and
	// the others); empty for the trajectory's first sequence.
	Split string
}

// Tokens are the aligned token arrays of one sample as the trainer
// formats hold them: ids, loss mask and logprobs of the same length, the
// logprobs 0 where the mask is 0 (see Sample).
type Tokens struct {
	InputIDs []int
	LossMask []int8
	Logprobs []float64
}

// Wide returns s's tokens in a Sample's form: ids widened to int and a
// logprob for every token, 0 where the mask is 0. The mask is shared with
// s unless copyMask is set. s must be valid (see Validate).
func (s Sequence) Wide(copyMask bool) Tokens {
	ids := make([]int, len(s.InputIDs))
	for i, id := range s.InputIDs {
		ids[i] = int(id)
	}
	logprobs := make([]float64, len(s.LossMask))
	j := 0
	for i, m := range s.LossMask {
		if m != 0 && j < len(s.Logprobs) {
			logprobs[i] = s.Logprobs[j]
			j++
		}
	}
	mask := s.LossMask[:len(s.LossMask):len(s.LossMask)]
	if copyMask {
		mask = append([]int8(nil), s.LossMask...)
	}
	return Tokens{InputIDs: ids, LossMask: mask, Logprobs: logprobs}
}

// Trajectory is what sample building needs of one agent trajectory. A
// trajectory split by chat-template drift has several sequences and yields
// one Sample per sequence, all with the same reward and advantage; a
// trajectory without sequences (a rollout that failed before producing
// tokens) yields no Sample.
type Trajectory struct {
	Sequences     []Sequence
	PolicyVersion int64
	NumTurns      int
	FinishReason  string
	FormatOK      bool

	// Validated skips Build's check of the sequences. Set it only when
	// this process has already checked every sequence with
	// Sequence.Validate (the farm does so as it derives them); sequences
	// decoded from elsewhere must be checked.
	Validated bool
}

// GroupTrajectories holds the trajectories of one query's group: Planner[k]
// is rollout k's planner (or single agent) trajectory and Executors[k][i] its
// executor trajectory with sub_index i.
type GroupTrajectories struct {
	Planner   []Trajectory
	Executors [][]Trajectory
}

// SampleBuilder turns processed groups into Samples.
type SampleBuilder struct {
	// Run and Step are copied into every sample.
	Run  string
	Step int
	// PadTokenID is the single token of a padding sample.
	PadTokenID int
	// PadPolicyVersion is the policy_version of padding samples.
	PadPolicyVersion int64

	// ShareTokens makes the samples of one Build call that hold the same
	// sequence (a duplicated executor and its original) share one widened
	// copy of its tokens, and share its loss mask with the trajectory,
	// so samples alias the caller's mask and each other. The farm sets it:
	// its trajectories belong to the step being assembled and are never
	// modified, and widening every sequence once more for each duplicate
	// was a fifth of all the memory a step allocated. Without it every
	// sample has arrays of its own.
	ShareTokens bool
}

// Build returns the planner and executor samples of one group. The
// trajectories must match the group (K planner trajectories, d_k executor
// trajectories for rollout k) and every sequence must be well formed (see
// Sequence.Validate): at least one token, a mask value 0 or 1 for each, a
// finite logprob for each sampled token. A violation is an error
// naming the query, rollout and sub-trajectory. Levels marked dropped in res
// yield no samples.
func (b SampleBuilder) Build(res GroupResult, tr GroupTrajectories) (planner, executor []Sample, err error) {
	if len(tr.Planner) != len(res.Main) {
		return nil, nil, fmt.Errorf("build samples for query %q: %d planner trajectories for %d rollouts", res.QueryID, len(tr.Planner), len(res.Main))
	}
	if tr.Executors != nil && len(tr.Executors) != len(res.Main) {
		return nil, nil, fmt.Errorf("build samples for query %q: executor trajectories for %d rollouts, want %d", res.QueryID, len(tr.Executors), len(res.Main))
	}
	for k, p := range tr.Planner {
		if err := p.validate(); err != nil {
			return nil, nil, fmt.Errorf("build samples for query %q rollout %d planner: %w", res.QueryID, k, err)
		}
		var execs []Trajectory
		if tr.Executors != nil {
			execs = tr.Executors[k]
		}
		if want := res.Stats.D[k]; len(execs) != want {
			return nil, nil, fmt.Errorf("build samples for query %q rollout %d: %d executor trajectories, rewards given for %d", res.QueryID, k, len(execs), want)
		}
		for i, e := range execs {
			if err := e.validate(); err != nil {
				return nil, nil, fmt.Errorf("build samples for query %q rollout %d sub %d: %w", res.QueryID, k, i, err)
			}
		}
	}

	wide := map[wideKey]Tokens{}
	if !res.MainDropped {
		for _, m := range res.Main {
			t := tr.Planner[m.Rollout]
			for _, seq := range t.Sequences {
				planner = append(planner, b.sample(wide, res.QueryID, RolePlanner, m.Rollout, nil, nil, t, seq, m.Reward, m.Advantage))
			}
		}
	}
	if res.SubDropped {
		return planner, nil, nil
	}
	for _, e := range res.Sub {
		sub := e.SubIndex
		if e.Padding {
			pad := Trajectory{PolicyVersion: b.PadPolicyVersion, FinishReason: FinishReasonPadding}
			executor = append(executor, b.padding(res.QueryID, e.Rollout, sub, pad))
			continue
		}
		var dup *SubRef
		if e.Duplicate {
			dup = &e.Source
		}
		t := tr.Executors[e.Source.Rollout][e.Source.SubIndex]
		for _, seq := range t.Sequences {
			executor = append(executor, b.sample(wide, res.QueryID, RoleExecutor, e.Rollout, &sub, dup, t, seq, e.Reward, e.Advantage))
		}
	}
	return planner, executor, nil
}

// wideKey identifies a sequence's token arrays by address and length, so
// that samples of the same sequence share one widened copy.
type wideKey struct {
	ids  *int32
	n    int
	mask *int8
}

// sample assembles one Sample. Its tokens are seq's widened (see
// Sequence.Wide): a copy of their own for every sample, unless
// b.ShareTokens is set, when wide holds each sequence's one copy. Shared
// slices are capped at their length so that appending to one never
// writes into another.
func (b SampleBuilder) sample(wide map[wideKey]Tokens, query string, role Role, k int, sub *int, dup *SubRef, t Trajectory, seq Sequence, reward, adv float64) Sample {
	var tok Tokens
	if b.ShareTokens && len(seq.InputIDs) > 0 && len(seq.LossMask) > 0 {
		key := wideKey{&seq.InputIDs[0], len(seq.InputIDs), &seq.LossMask[0]}
		var ok bool
		if tok, ok = wide[key]; !ok {
			tok = seq.Wide(false)
			wide[key] = tok
		}
	} else {
		tok = seq.Wide(true)
	}
	return b.assemble(query, role, k, sub, dup, t, seq, tok, reward, adv)
}

// padding is a padding sample: one token, the pad token, outside the loss.
func (b SampleBuilder) padding(query string, k, sub int, pad Trajectory) Sample {
	tok := Tokens{InputIDs: []int{b.PadTokenID}, LossMask: []int8{0}, Logprobs: []float64{0}}
	return b.assemble(query, RoleExecutor, k, &sub, nil, pad, Sequence{}, tok, 0, 0)
}

// assemble builds the Sample of one sequence with tokens tok.
func (b SampleBuilder) assemble(query string, role Role, k int, sub *int, dup *SubRef, t Trajectory, seq Sequence, tok Tokens, reward, adv float64) Sample {
	if sub != nil {
		v := *sub
		sub = &v
	}
	if dup != nil {
		v := *dup
		dup = &v
	}
	return Sample{
		Run:           b.Run,
		Step:          b.Step,
		Role:          role,
		QueryID:       query,
		Rollout:       k,
		SubIndex:      sub,
		DuplicateOf:   dup,
		PolicyVersion: t.PolicyVersion,
		InputIDs:      tok.InputIDs[:len(tok.InputIDs):len(tok.InputIDs)],
		LossMask:      tok.LossMask[:len(tok.LossMask):len(tok.LossMask)],
		Logprobs:      tok.Logprobs[:len(tok.Logprobs):len(tok.Logprobs)],
		Reward:        reward,
		Advantage:     adv,
		NumTurns:      t.NumTurns,
		FinishReason:  t.FinishReason,
		FormatOK:      t.FormatOK,

		FirstTurn:         seq.FirstTurn,
		SampleTurns:       len(seq.TurnFinishReasons),
		TurnFinishReasons: append(make([]string, 0, len(seq.TurnFinishReasons)), seq.TurnFinishReasons...),
		SplitReason:       seq.Split,
	}
}

// validate checks every sequence of t.
func (t Trajectory) validate() error {
	if t.Validated {
		return nil
	}
	for s, seq := range t.Sequences {
		if err := seq.Validate(); err != nil {
			return fmt.Errorf("sequence %d: %w", s, err)
		}
	}
	return nil
}

// Validate reports the first way in which s is malformed: no tokens, a
// mask whose length differs from the ids', a mask value other than 0 or
// 1, a logprob count other than the mask's count of 1s, or a non-finite
// logprob.
func (s Sequence) Validate() error {
	n := len(s.InputIDs)
	if n == 0 {
		return fmt.Errorf("no tokens")
	}
	if len(s.LossMask) != n {
		return fmt.Errorf("lengths differ: %d input ids, %d mask values", n, len(s.LossMask))
	}
	sampled := 0
	for i, m := range s.LossMask {
		switch m {
		case 0:
		case 1:
			sampled++
		default:
			return fmt.Errorf("token %d: loss mask %d, want 0 or 1", i, m)
		}
	}
	if len(s.Logprobs) != sampled {
		return fmt.Errorf("%d logprobs for %d sampled tokens (mask 1)", len(s.Logprobs), sampled)
	}
	for i, lp := range s.Logprobs {
		if math.IsNaN(lp) || math.IsInf(lp, 0) {
			return fmt.Errorf("sampled token %d: logprob %v is not finite", i, lp)
		}
	}
	return nil
}

// Compact returns t in a Sequence's compact form (the logprobs of the
// mask-1 tokens only), for samples read back from a step's files. An id
// outside int32's range or a logprob that is not 0 where the mask is 0 is
// an error: the compact form could not hold it.
func (t Tokens) Compact() (Sequence, error) {
	if len(t.LossMask) != len(t.InputIDs) || len(t.Logprobs) != len(t.InputIDs) {
		return Sequence{}, fmt.Errorf("lengths differ: %d input ids, %d mask values, %d logprobs", len(t.InputIDs), len(t.LossMask), len(t.Logprobs))
	}
	s := Sequence{InputIDs: make([]int32, len(t.InputIDs)), LossMask: t.LossMask}
	for i, id := range t.InputIDs {
		if id < math.MinInt32 || id > math.MaxInt32 {
			return Sequence{}, fmt.Errorf("token %d: id %d does not fit in 32 bits", i, id)
		}
		s.InputIDs[i] = int32(id)
	}
	for i, m := range t.LossMask {
		switch {
		case m != 0:
			s.Logprobs = append(s.Logprobs, t.Logprobs[i])
		case t.Logprobs[i] != 0:
			return Sequence{}, fmt.Errorf("token %d: logprob %v where loss mask is 0", i, t.Logprobs[i])
		}
	}
	return s, nil
}
