package jsontext

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encodingJSON is what encoding/json writes for s.
func encodingJSON(t *testing.T, s string, escapeHTML bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain text, long enough for a word", `"quoted" \ back`, "<a href='x'>&amp;</a>",
		"tab\tnew\nline\r\x00\x1f\x7f", "é 東京 \u2028 \u2029 \U0001F600", "\xff\xfe bad \xc3", "0123456<", "01234567&89"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, html := range []bool{false, true} {
			if got, want := AppendString([]byte("x"), s, html), append([]byte("x"), encodingJSON(t, s, html)...); !bytes.Equal(got, want) {
				t.Fatalf("AppendString(%q, html=%v) = %s, encoding/json %s", s, html, got, want)
			}
		}
	})
}
