package jsonfast

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

// FuzzScannerText checks Scanner.Str and Text against json.Unmarshal for
// s as the inside of a string literal: what the scanner takes decodes the
// same, and it takes nothing json.Unmarshal rejects.
func FuzzScannerText(f *testing.F) {
	for _, s := range []string{"", "plain text", `esc \" \\ \/ \b \f \n \r \t`, `\u00e9 \ud83d\ude00 \ud800 \udc00\u0041`,
		"é😀\xff\xe2\x82", "ctl \x01", `bad \x`, `\u12`, "long plain ascii text that runs past eight bytes"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lit := []byte(`"` + s + `"`)
		sc := Scanner{B: lit}
		got, ok := sc.Text()
		var want string
		err := json.Unmarshal(lit, &want)
		if !ok || sc.I != len(lit) {
			if err == nil && ok {
				t.Fatalf("Text(%q) stopped at %d of %d", lit, sc.I, len(lit))
			}
			return
		}
		if err != nil {
			t.Fatalf("Text accepted %q, json.Unmarshal: %v", lit, err)
		}
		if got != want {
			t.Fatalf("Text(%q) = %q, json.Unmarshal %q", lit, got, want)
		}
	})
}
