package gateway

import (
	"encoding/json"
	"testing"
)

// FuzzContentText holds contentText's fast path for strings to
// encoding/json's decoding of the same message.
func FuzzContentText(f *testing.F) {
	for _, s := range []string{`{"content":"plain"}`, `{"content":"a\"b\\n"}`, "{\"content\":\"\xff\"}", `{"content":null}`,
		`{"content":[{"type":"text","text":"x"},{"type":"text","text":"y"}]}`, `{"content":"é…"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var m wireMessage
		if json.Unmarshal([]byte(body), &m) != nil {
			return
		}
		got, err := contentText(m.Content)
		var want string
		if json.Unmarshal(m.Content, &want) != nil {
			return // not a string: the slow paths are encoding/json's own
		}
		if err != nil || got != want {
			t.Errorf("contentText(%s) = %q, %v; encoding/json says %q", m.Content, got, err, want)
		}
	})
}
