package llm

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encodedByJSON is what an encoding/json Encoder without HTML escaping
// writes for s, the newline it ends with cut.
func encodedByJSON(tb testing.TB, s string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		tb.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

var jsonStringSeeds = []string{
	"", "plain", "Hello, world: a sentence long enough to have runs.", `"quoted" and \backslashed\`,
	"<tool_call>&amp;</tool_call>", "\n\r\t\b\f\x00\x01\x1f\x7f", "é 日本 😀 \uFFFD", "\u2028 line \u2029 para",
	"\xff", "\xc3", "a\xe2\x80b", "\xed\xa0\x80", "\xf4\x90\x80\x80",
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range jsonStringSeeds {
		got := appendJSONString([]byte("prefix"), s)
		if want := append([]byte("prefix"), encodedByJSON(t, s)...); !bytes.Equal(got, want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
	for c := range 256 {
		s := string([]byte{'a', byte(c), 'b'})
		if got, want := appendJSONString(nil, s), encodedByJSON(t, s); !bytes.Equal(got, want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
}

// FuzzAppendJSONString checks appendJSONString against encoding/json on any
// string.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStringSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := appendJSONString(nil, s), encodedByJSON(t, s); !bytes.Equal(got, want) {
			t.Fatalf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}
