package llm

import (
	"encoding/json"
	"testing"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// FuzzToolSignature checks the hand-written tool signature against
// encoding/json's, errors included.
func FuzzToolSignature(f *testing.F) {
	f.Add("search", "Search the web <fast> & \"well\".", []byte(`{"type": "object",
	  "properties": {"query": {"type": "array", "items": {"type": "string"}}}}`))
	f.Add("visit", "", []byte(nil))
	f.Add("x\u2028", "\xff", []byte(`{"a":}`))
	f.Add("f", "d", []byte(` "<&>" `))
	f.Add("f", "d", []byte(`[1, 2.50, true, null, "\u0041"]`))
	f.Fuzz(func(t *testing.T, name, desc string, params []byte) {
		tool := policy.Tool{Name: name, Description: desc, Parameters: json.RawMessage(params)}
		got, gotErr := appendToolSignature([]byte("prefix"), tool)
		want, wantErr := appendToolSignatureReflect([]byte("prefix"), tool)
		if (gotErr != nil) != (wantErr != nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Fatalf("%+v: error %v, want %v", tool, gotErr, wantErr)
		}
		if string(got) != string(want) {
			t.Fatalf("%+v:\n got %s\nwant %s", tool, got, want)
		}
	})
}
