package rollout

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestMessageRecordJSON checks that a message record reads text, null and
// multi-part content and writes each back as it read it.
func TestMessageRecordJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in, out  string
		content, parts string
	}{
		{name: "text", in: `{"role":"assistant","content":"hi","reasoning_content":"r"}`, out: `{"role":"assistant","content":"hi","reasoning_content":"r"}`, content: "hi"},
		{name: "null", in: `{"role":"assistant","content":null}`, out: `{"role":"assistant"}`},
		{name: "absent", in: `{"role":"assistant","tool_calls":[{"id":"call-0-0","type":"function","function":{"name":"f"}}]}`,
			out: `{"role":"assistant","tool_calls":[{"id":"call-0-0","type":"function","function":{"name":"f"}}]}`},
		{name: "parts", in: `{"role":"assistant","content":[{"type":"text","text":"p"}],"refusal":"no"}`,
			out: `{"role":"assistant","refusal":"no","content":[{"type":"text","text":"p"}]}`, parts: `[{"type":"text","text":"p"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m MessageRecord
			if err := json.Unmarshal([]byte(tc.in), &m); err != nil {
				t.Fatal(err)
			}
			if m.Content != tc.content || string(m.Parts) != tc.parts {
				t.Errorf("content %q, parts %s; want %q, %s", m.Content, m.Parts, tc.content, tc.parts)
			}
			got, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.out {
				t.Errorf("encodes as %s, want %s", got, tc.out)
			}
		})
	}
	if _, err := json.Marshal(MessageRecord{Content: "x", Parts: json.RawMessage(`[]`)}); !errors.Is(err, ErrContentAndParts) {
		t.Errorf("text and parts: error %v, want ErrContentAndParts", err)
	}
	var m MessageRecord
	if err := json.Unmarshal([]byte(`{"content":7}`), &m); err == nil {
		t.Error("numeric content decoded without an error")
	}
}
