package rollout

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// SampleEntry is a Sample as the trainer hand-off formats (the files
// backend's index.jsonl, the HTTP trainer's step body) write it beside a
// batch's distinct token sequences: a JSON object of "seq", the index of
// its sequence, then the sample's members in step-file order without its
// run, step and role (the batch's) and without its token arrays. Its
// encoding is AppendSampleEntryJSON's; encoding/json decodes it with
// UnmarshalJSON.
type SampleEntry struct {
	Seq int
	// Sample holds the entry's fields; its run, step, role and token
	// arrays are zero (Expand fills them in).
	Sample Sample
}

// AppendSampleEntryJSON appends the entry of s whose tokens are sequence
// seq, without a newline, as encoding/json with HTML escaping off writes a
// struct of the same members. A value encoding/json rejects (a non-finite
// reward or advantage) is encoding/json's error.
func AppendSampleEntryJSON(dst []byte, seq int, s *Sample) ([]byte, error) {
	start := len(dst)
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, int64(seq), 10)
	for i := range sampleFields {
		f := &sampleFields[i]
		if f.part != partEntry {
			continue
		}
		dst = appendJSONKey(dst, f.key, false)
		var ok bool
		if dst, ok = f.appendValue(dst, s); !ok {
			return dst[:start], entryError(s)
		}
	}
	return append(dst, '}'), nil
}

// entryError returns encoding/json's error for the entry fields of s.
func entryError(s *Sample) error {
	c := *s
	c.InputIDs, c.LossMask, c.Logprobs = nil, nil, nil
	if _, err := json.Marshal(&c); err != nil {
		return err
	}
	return fmt.Errorf("sample entry encoder rejected a value encoding/json accepts")
}

// MarshalJSON returns AppendSampleEntryJSON's encoding of e.
func (e SampleEntry) MarshalJSON() ([]byte, error) {
	return AppendSampleEntryJSON(nil, e.Seq, &e.Sample)
}

// UnmarshalJSON decodes an entry. A member that is not "seq" or one of an
// entry's is an error, as encoding/json's DisallowUnknownFields makes it
// (keys match as encoding/json matches them, ignoring case).
func (e *SampleEntry) UnmarshalJSON(data []byte) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return err
	}
	for k := range members {
		if !isEntryKey(k) {
			return fmt.Errorf("json: unknown field %q", k)
		}
	}
	w := struct {
		Seq int `json:"seq"`
		*Sample
	}{Sample: &Sample{}}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	e.Seq, e.Sample = w.Seq, *w.Sample
	return nil
}

// isEntryKey reports whether k names a member of an entry.
func isEntryKey(k string) bool {
	if strings.EqualFold(k, "seq") {
		return true
	}
	for i := range sampleFields {
		if sampleFields[i].part == partEntry && strings.EqualFold(k, sampleFields[i].key) {
			return true
		}
	}
	return false
}

// Expand returns the entry's Sample in the batch of run, step and role,
// its tokens being q's (shared, not copied).
func (e SampleEntry) Expand(run string, step int, role Role, q Tokens) Sample {
	s := e.Sample
	s.Run, s.Step, s.Role = run, step, role
	s.InputIDs, s.LossMask, s.Logprobs = q.InputIDs, q.LossMask, q.Logprobs
	return s
}
