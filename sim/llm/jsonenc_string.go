package llm

import "unicode/utf8"

// appendJSONString appends s as a quoted JSON string, writing what an
// encoding/json Encoder with SetEscapeHTML(false) writes for it: '"', '\\'
// and the control characters escaped (\n, \r, \t, \b and \f by name, the
// rest as \u00XX), each byte of invalid UTF-8 as \ufffd, U+2028 and U+2029
// as \u2028 and \u2029, everything else as is. It is the sim's own
// (see doc.go, "Independence"); FuzzAppendJSONString checks it against
// encoding/json.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	// from is where the run of bytes not yet copied starts: text is copied
	// a run at a time, between the bytes that need rewriting.
	from := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			esc := asciiEscape[c]
			if esc == 0 {
				i++
				continue
			}
			dst = append(dst, s[from:i]...)
			if esc == 'u' {
				dst = append(dst, '\\', 'u', '0', '0', hexDigit[c>>4], hexDigit[c&0xf])
			} else {
				dst = append(dst, '\\', esc)
			}
			i++
			from = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		var rewrite string
		switch {
		case r == utf8.RuneError && n == 1:
			rewrite = `\ufffd`
		case r == '\u2028':
			rewrite = `\u2028`
		case r == '\u2029':
			rewrite = `\u2029`
		default:
			i += n
			continue
		}
		dst = append(dst, s[from:i]...)
		dst = append(dst, rewrite...)
		i += n
		from = i
	}
	dst = append(dst, s[from:]...)
	return append(dst, '"')
}

// asciiEscape tells, for each ASCII byte, what follows the backslash that
// replaces it: 0 for a byte written as is, 'u' for a \u00XX escape.
var asciiEscape = func() (t [utf8.RuneSelf]byte) {
	for c := range 0x20 {
		t[c] = 'u'
	}
	t['\n'], t['\r'], t['\t'], t['\b'], t['\f'] = 'n', 'r', 't', 'b', 'f'
	t['"'], t['\\'] = '"', '\\'
	return t
}()

const hexDigit = "0123456789abcdef"
