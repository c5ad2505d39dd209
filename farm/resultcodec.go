package farm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/fxamacker/cbor/v2"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
)

// A stored result is, in order:
//
//	the digest as one line of JSON and '\n' (so a step's digests are read
//	  without decoding its rollouts);
//	uvarint(n) and n bytes of CBOR (RFC 8949) of the result without its
//	  token sequences (storedResult): the tree, the scores, the task;
//	the token sequences of the planner and then of each executor, each
//	  list as appendSequences writes it.
//
// CBOR keeps nil and empty slices apart and float64s exact, so a result
// decoded from the store writes the same step files as the one encoded;
// the sequences, most of a result, take a compact binary form that costs
// a fraction of a generic encoding's CPU and bytes.

// resultCBOR holds the CBOR modes of stored results.
var resultCBOR = func() (c struct {
	enc cbor.EncMode
	dec cbor.DecMode
}) {
	var err error
	if c.enc, err = (cbor.EncOptions{Time: cbor.TimeRFC3339Nano}).EncMode(); err != nil {
		panic(err)
	}
	if c.dec, err = (cbor.DecOptions{MaxArrayElements: 1 << 27, MaxMapPairs: 1 << 27, MaxNestedLevels: 64}).DecMode(); err != nil {
		panic(err)
	}
	return c
}()

// resultBuffers recycles the buffers results are encoded into.
var resultBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// encodeResult encodes r as the store keeps it and calls put with the
// bytes, which are valid only during the call.
func encodeResult(r *RolloutResult, put func(json.RawMessage) error) error {
	d, err := json.Marshal(digestOf(r))
	if err != nil {
		return err
	}
	buf := resultBuffers.Get().(*bytes.Buffer)
	defer resultBuffers.Put(buf)
	buf.Reset()
	buf.Write(d)
	buf.WriteByte('\n')
	meta, err := resultCBOR.enc.Marshal(toStored(storedForm(r)))
	if err != nil {
		return err
	}
	out := binary.AppendUvarint(buf.Bytes(), uint64(len(meta)))
	out = append(out, meta...)
	out = appendSequences(out, r.Planner.Sequences)
	for _, e := range r.Executors {
		out = appendSequences(out, e.Sequences)
	}
	err = put(out)
	// Keep the grown buffer for the next result.
	*buf = *bytes.NewBuffer(out[:0])
	return err
}

// decodeResult decodes a stored result.
func decodeResult(raw []byte) (*RolloutResult, error) {
	_, body, ok := bytes.Cut(raw, []byte{'\n'})
	if !ok {
		return nil, errors.New("stored result has no digest line")
	}
	n, k := binary.Uvarint(body)
	if k <= 0 || n > uint64(len(body)-k) {
		return nil, errors.New("stored result: malformed length")
	}
	var sr storedResult
	if err := resultCBOR.dec.Unmarshal(body[k:k+int(n)], &sr); err != nil {
		return nil, err
	}
	r := sr.result()
	if r.Tree == nil {
		return nil, errors.New("stored result has no rollout tree")
	}
	rest := body[k+int(n):]
	var err error
	if r.Planner.Sequences, rest, err = decodeSequences(rest); err != nil {
		return nil, fmt.Errorf("stored result: planner: %w", err)
	}
	if err := withPieces(r.Planner.Sequences, sr.Planner.Pieces); err != nil {
		return nil, fmt.Errorf("stored result: planner: %w", err)
	}
	for i := range r.Executors {
		if r.Executors[i].Sequences, rest, err = decodeSequences(rest); err != nil {
			return nil, fmt.Errorf("stored result: executor %d: %w", i, err)
		}
		if err := withPieces(r.Executors[i].Sequences, sr.Executors[i].Pieces); err != nil {
			return nil, fmt.Errorf("stored result: executor %d: %w", i, err)
		}
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("stored result: %d trailing bytes", len(rest))
	}
	return r, nil
}

// storedResult is a RolloutResult as the store's CBOR holds it: the same
// fields without the token sequences, which follow it.
type storedResult struct {
	Task           rollout.RolloutTask   `cbor:"task"`
	Tree           *agents.Rollout       `cbor:"tree"`
	Scores         rollout.RolloutScores `cbor:"scores"`
	Planner        storedTrajectory      `cbor:"planner"`
	Executors      []storedTrajectory    `cbor:"executors"`
	ScoringSeconds float64               `cbor:"scoring_seconds,omitempty"`
	Error          string                `cbor:"error,omitempty"`
	// The failure class and retries; a resumed run retries an infra
	// result whose retries are not used up.
	FailureKind     failure.Kind `cbor:"failure_kind,omitempty"`
	FailureCause    string       `cbor:"failure_cause,omitempty"`
	FailureEndpoint string       `cbor:"failure_endpoint,omitempty"`
	Retries         int          `cbor:"retries,omitempty"`
	RetryCauses     []string     `cbor:"retry_causes,omitempty"`
	RetryEndpoint   string       `cbor:"retry_endpoint,omitempty"`
	ToolOutages     int          `cbor:"tool_outages,omitempty"`
}

type storedTrajectory struct {
	Drifts        int    `cbor:"drifts"`
	HistoryEdits  int    `cbor:"history_edits,omitempty"`
	ContextCuts   int    `cbor:"context_cuts,omitempty"`
	SequenceError string `cbor:"sequence_error,omitempty"`
	// Pieces are the sequences' turn records, in the sequences' order
	// (the token blob after the CBOR holds only their tokens); absent in
	// results stored before sequences had them.
	Pieces []storedPiece `cbor:"pieces,omitempty"`
}

// storedPiece is which turns of its trajectory one sequence holds and why
// it started anew (see rollout.Sequence).
type storedPiece struct {
	FirstTurn int      `cbor:"first_turn,omitempty"`
	Finish    []string `cbor:"finish,omitempty"`
	Split     string   `cbor:"split,omitempty"`
}

func toStoredTrajectory(t TrajectoryResult) storedTrajectory {
	st := storedTrajectory{Drifts: t.Drifts, HistoryEdits: t.HistoryEdits, ContextCuts: t.ContextCuts, SequenceError: t.SequenceError}
	if len(t.Sequences) > 0 {
		st.Pieces = make([]storedPiece, len(t.Sequences))
		for i, s := range t.Sequences {
			st.Pieces[i] = storedPiece{FirstTurn: s.FirstTurn, Finish: s.TurnFinishReasons, Split: s.Split}
		}
	}
	return st
}

func (t storedTrajectory) result() TrajectoryResult {
	return TrajectoryResult{Drifts: t.Drifts, HistoryEdits: t.HistoryEdits, ContextCuts: t.ContextCuts, SequenceError: t.SequenceError}
}

// withPieces copies the turn records of pieces onto seqs, the sequences
// decoded from the token blob; a count that differs is a corrupt result.
func withPieces(seqs []rollout.Sequence, pieces []storedPiece) error {
	if pieces == nil {
		return nil
	}
	if len(pieces) != len(seqs) {
		return fmt.Errorf("%d sequence records for %d sequences", len(pieces), len(seqs))
	}
	for i, p := range pieces {
		seqs[i].FirstTurn, seqs[i].TurnFinishReasons, seqs[i].Split = p.FirstTurn, p.Finish, p.Split
	}
	return nil
}

func toStored(r *RolloutResult) storedResult {
	s := storedResult{Task: r.Task, Tree: r.Tree, Scores: r.Scores, Planner: toStoredTrajectory(r.Planner),
		ScoringSeconds: r.ScoringSeconds, Error: r.Error,
		FailureKind: r.FailureKind, FailureCause: r.FailureCause, FailureEndpoint: r.FailureEndpoint,
		Retries: r.Retries, RetryCauses: r.RetryCauses, RetryEndpoint: r.RetryEndpoint, ToolOutages: r.ToolOutages}
	if r.Executors != nil {
		s.Executors = make([]storedTrajectory, len(r.Executors))
		for i, e := range r.Executors {
			s.Executors[i] = toStoredTrajectory(e)
		}
	}
	return s
}

func (s storedResult) result() *RolloutResult {
	r := &RolloutResult{Task: s.Task, Tree: s.Tree, Scores: s.Scores, Planner: s.Planner.result(),
		ScoringSeconds: s.ScoringSeconds, Error: s.Error,
		FailureKind: s.FailureKind, FailureCause: s.FailureCause, FailureEndpoint: s.FailureEndpoint,
		Retries: s.Retries, RetryCauses: s.RetryCauses, RetryEndpoint: s.RetryEndpoint, ToolOutages: s.ToolOutages}
	if s.Executors != nil {
		r.Executors = make([]TrajectoryResult, len(s.Executors))
		for i, e := range s.Executors {
			r.Executors[i] = e.result()
		}
	}
	return r
}

// storedForm returns r as the store keeps it: its turns without their
// completion ids and logprobs, which its sequences hold already and which
// nothing reads once the sequences are built (the step files take tokens
// from the sequences, the inspection records drop them). A turn whose
// usage is zero keeps its ids, which the summary counts instead. r is
// left as it is.
func storedForm(r *RolloutResult) *RolloutResult {
	c := *r
	c.Tree = mapTurns(r.Tree, func(t *llm.Turn) *llm.Turn {
		if t.Usage.PromptTokens == 0 && t.Usage.CompletionTokens == 0 {
			return t
		}
		tc := *t
		tc.CompletionIDs, tc.Logprobs = nil, nil
		return &tc
	})
	return &c
}

// decodeDigest reads the digest line of a stored result.
func decodeDigest(raw []byte) (resultDigest, error) {
	line, _, ok := bytes.Cut(raw, []byte{'\n'})
	var d resultDigest
	if !ok {
		return d, errors.New("stored result has no digest line")
	}
	if err := json.Unmarshal(line, &d); err != nil {
		return d, fmt.Errorf("stored result's digest: %w", err)
	}
	return d, nil
}
