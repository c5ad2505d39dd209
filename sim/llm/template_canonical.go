package llm

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// canonicalJSON rewrites JSON text in the layout Python's json.dumps gives
// a parsed value with sort_keys: keys sorted, ", " between items, ": "
// after keys, non-ASCII kept as is, numbers as written. Text that is not
// one JSON value is returned unchanged, so malformed arguments stay
// malformed, as a template that cannot parse them leaves them.
func canonicalJSON(text string) string {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return text
	}
	var b bytes.Buffer
	writeCanonical(&b, v)
	return b.String()
}

func writeCanonical(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeCanonicalString(b, k)
			b.WriteString(": ")
			writeCanonical(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case string:
		writeCanonicalString(b, x)
	case json.Number:
		b.WriteString(x.String())
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	default: // nil
		b.WriteString("null")
	}
}

// writeCanonicalString writes s as a JSON string without HTML escapes.
func writeCanonicalString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a Go string always encodes
	b.Truncate(b.Len() - 1) // Encode's newline
}
