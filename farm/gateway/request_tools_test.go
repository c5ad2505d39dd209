package gateway

import (
	"bytes"
	"encoding/json"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// toolListCases are tool lists as agents send them: keys out of order,
// HTML characters, numbers, unicode, nested schemas, no parameters.
var toolListCases = []string{
	`[{"type":"function","function":{"name":"search","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]},"strict":false}}]`,
	`[{"function":{"parameters":{"z":1,"a":[1.50,2e3,-0.0,1e400000000],"m":{"<b>":"&é\u2028"}},"name":"x"},"type":"function"},{"type":"function","function":{"name":"y"}}]`,
	`[{"type":"function","function":{"name":"n","parameters":null}},{"type":"function"}]`,
	`[{"type":"web_search","search_context_size":"low"}]`,
	`[]`,
}

// TestCanonicalToolsEncodeSame checks that the canonical list encodes to
// the bytes the list encoding/json decodes encodes to, so the engine gets
// the same request, and that a second request's list is the remembered one.
func TestCanonicalToolsEncodeSame(t *testing.T) {
	var lists toolLists
	for _, raw := range toolListCases {
		var tools []openai.Tool
		if err := json.Unmarshal([]byte(raw), &tools); err != nil {
			// 1e400000000 is out of range: a list encoding/json refuses is
			// never canonicalized.
			continue
		}
		want, err := json.Marshal(tools)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(canonicalTools(tools))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: canonical list encodes to\n%s (%v), want\n%s", raw, got, err, want)
		}
		body := []byte(`{"messages":[{"role":"user","content":"q"}],"tools":` + raw + `}`)
		var first, second chatRequest
		if err := decodeChatRequest(body, &first, &lists, nil); err != nil {
			t.Fatal(err)
		}
		if err := decodeChatRequest(body, &second, &lists, nil); err != nil {
			t.Fatal(err)
		}
		if !second.toolsKnown || len(second.Tools) > 0 && &second.Tools[0] != &first.Tools[0] {
			t.Errorf("%s: second request's list not the remembered one", raw)
		}
		if got, _ := json.Marshal(second.Tools); !bytes.Equal(got, want) {
			t.Errorf("%s: remembered list encodes to %s, want %s", raw, got, want)
		}
	}
}
