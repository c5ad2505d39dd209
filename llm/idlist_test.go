package llm

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestIDListDecodesAsEncodingJSON: the fast path and encoding/json agree:
// the same values, and an error where encoding/json has one.
func TestIDListDecodesAsEncodingJSON(t *testing.T) {
	for _, in := range []string{`[1,2,151645]`, `[]`, `null`, ` [ 3 , 4 ] `, `[1.5]`, `[2147483648]`, `["1"]`, `[-7]`, `{"a":1}`} {
		var want []int32
		werr := json.Unmarshal([]byte(`{"x":`+in+`}`), &struct{ X *[]int32 }{&want})
		var got IDList
		gerr := json.Unmarshal([]byte(`{"x":`+in+`}`), &struct{ X *IDList }{&got})
		if (werr == nil) != (gerr == nil) || werr == nil && (!slices.Equal(want, got) || (want == nil) != (got == nil)) {
			t.Errorf("%s: got %v (%v), want %v (%v)", in, got, gerr, want, werr)
		}
	}
}
