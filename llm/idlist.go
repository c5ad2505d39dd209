package llm

import (
	"encoding/json"

	"github.com/mgrpo/mgrpo/internal/jsonfast"
)

// IDList is a token id array that decodes with the fast integer scanner
// instead of encoding/json's reflection over every element: the token
// path's answers (a completion echoing its prompt's ids, a tokenize
// rendering) are mostly such arrays, thousands of ids long. A value the
// scanner does not take is left to encoding/json, whose result or error
// stands.
type IDList []int32

// UnmarshalJSON implements json.Unmarshaler.
func (l *IDList) UnmarshalJSON(b []byte) error {
	s := jscan{Scanner: jsonfast.Scanner{B: b}}
	if ids, ok := s.ints(); ok {
		s.WS()
		if s.I == len(b) {
			*l = ids
			return nil
		}
	}
	var ids []int32
	if err := json.Unmarshal(b, &ids); err != nil {
		return err
	}
	*l = ids
	return nil
}
