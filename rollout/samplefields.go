package rollout

import "strconv"

// sampleFields is the one description of Sample's JSON object that every
// hand-written codec walks: the step files' encoder (appendSampleJSON) and
// the trainer hand-off formats' entry encoder and decoder (SampleEntry). A
// new Sample field is a struct field in sample.go and a row here, in struct
// order, with the key of its json tag; TestSampleFieldsMatchTheStruct
// fails until both agree. Parquet and encoding/json (every reader) follow
// the struct's tags, the trainer backends' entries follow this table, and
// rollouttest's round trips check each codec. Token arrays are the
// exception: they travel as Sequence fields, in formats of their own.
var sampleFields = [...]sampleField{
	{"Run", "run", partBatch, func(dst []byte, s *Sample) ([]byte, bool) { return appendJSONString(dst, s.Run), true }},
	{"Step", "step", partBatch, func(dst []byte, s *Sample) ([]byte, bool) { return appendJSONInt(dst, s.Step), true }},
	{"Role", "role", partBatch, func(dst []byte, s *Sample) ([]byte, bool) { return appendJSONString(dst, string(s.Role)), true }},
	{"QueryID", "query_id", partEntry, func(dst []byte, s *Sample) ([]byte, bool) { return appendJSONString(dst, s.QueryID), true }},
	{"Rollout", "rollout", partEntry, func(dst []byte, s *Sample) ([]byte, bool) { return appendJSONInt(dst, s.Rollout), true }},
	{"SubIndex", "sub_index", partEntry, func(dst []byte, s *Sample) ([]byte, bool) {
		if s.SubIndex == nil {
			return append(dst, "null"...), true
		}
		return appendJSONInt(dst, *s.SubIndex), true
	}},
	{"DuplicateOf", "duplicate_of", partEntry, func(dst []byte, s *Sample) ([]byte, bool) {
		if s.DuplicateOf == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, `{"rollout":`...)
		dst = appendJSONInt(dst, s.DuplicateOf.Rollout)
		dst = append(dst, `,"sub_index":`...)
		dst = appendJSONInt(dst, s.DuplicateOf.SubIndex)
		return append(dst, '}'), true
	}},
	{"PolicyVersion", "policy_version", partEntry, func(dst []byte, s *Sample) ([]byte, bool) {
		return strconv.AppendInt(dst, s.PolicyVersion, 10), true
	}},
	// The token arrays are written together, by appendTokenArrays, so that
	// samples sharing their slices share their encoding (sharedTokens).
	{"InputIDs", "input_ids", partTokens, nil},
	{"LossMask", "loss_mask", partTokens, nil},
	{"Logprobs", "logprobs", partTokens, nil},
	{"Reward", "reward", partEntry, func(dst []byte, s *Sample) ([]byte, bool) { return appendJSONFloat(dst, s.Reward) }},
	{"Advantage", "advantage", partEntry, func(dst []byte, s *Sample) ([]byte, bool) { return appendJSONFloat(dst, s.Advantage) }},
	{"NumTurns", "num_turns", partEntry, func(dst []byte, s *Sample) ([]byte, bool) { return appendJSONInt(dst, s.NumTurns), true }},
	{"FinishReason", "finish_reason", partEntry, func(dst []byte, s *Sample) ([]byte, bool) {
		return appendJSONString(dst, s.FinishReason), true
	}},
	{"FormatOK", "format_ok", partEntry, func(dst []byte, s *Sample) ([]byte, bool) { return strconv.AppendBool(dst, s.FormatOK), true }},
	{"FirstTurn", "first_turn", partEntry, func(dst []byte, s *Sample) ([]byte, bool) { return appendJSONInt(dst, s.FirstTurn), true }},
	{"SampleTurns", "sample_turns", partEntry, func(dst []byte, s *Sample) ([]byte, bool) { return appendJSONInt(dst, s.SampleTurns), true }},
	{"TurnFinishReasons", "turn_finish_reasons", partEntry, func(dst []byte, s *Sample) ([]byte, bool) {
		if s.TurnFinishReasons == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, r := range s.TurnFinishReasons {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, r)
		}
		return append(dst, ']'), true
	}},
	{"SplitReason", "split_reason", partEntry, func(dst []byte, s *Sample) ([]byte, bool) {
		return appendJSONString(dst, s.SplitReason), true
	}},
}

// sampleField is one member of Sample's JSON object.
type sampleField struct {
	// name is the Go field's name, key its JSON key.
	name, key string
	part      samplePart
	// appendValue appends the member's value as encoding/json writes it
	// (HTML escaping off); false for a value encoding/json rejects (a
	// non-finite float). Token arrays have none (see appendTokenArrays).
	appendValue func(dst []byte, s *Sample) ([]byte, bool)
}

// samplePart is where a field travels in the trainer hand-off formats,
// which write a batch's shared fields once and each distinct token
// sequence once.
type samplePart uint8

const (
	// partEntry fields are members of every sample's entry (SampleEntry).
	partEntry samplePart = iota
	// partBatch fields (run, step, role) are the batch's: the manifest or
	// the step body's header holds them.
	partBatch
	// partTokens fields are the aligned token arrays, written as one of
	// the batch's distinct sequences (Sequence).
	partTokens
)

// appendJSONInt appends n in decimal.
func appendJSONInt(dst []byte, n int) []byte { return strconv.AppendInt(dst, int64(n), 10) }
