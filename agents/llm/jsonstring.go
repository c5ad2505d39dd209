package llm

import (
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mgrpo/mgrpo/internal/jsontext"
)

// JSON string text in both directions, with encoding/json's exact rules,
// so the fast decoders and the request encoder need no round trip through
// it for the message texts that make up most of a body.

// appendUnquoted appends the Go string encoding/json decodes from raw, the
// contents of a JSON string that jscan.str has validated: escapes are
// resolved, and each invalid UTF-8 byte and each unpaired surrogate escape
// becomes U+FFFD.
func appendUnquoted(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			i++
			switch e := raw[i]; e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4(raw[i+1:])
				i += 5
				if utf16.IsSurrogate(r) {
					// A valid pair is one rune; anything else is U+FFFD and
					// leaves what follows to be decoded on its own.
					r2 := rune(-1)
					if len(raw)-i >= 6 && raw[i] == '\\' && raw[i+1] == 'u' {
						r2 = hex4(raw[i+2:])
					}
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, e)
			}
			i++
		case c < utf8.RuneSelf:
			// Copy the run of plain bytes up to the next escape or
			// multi-byte sequence at once.
			j := i + 1
			for j < len(raw) && raw[j] != '\\' && raw[j] < utf8.RuneSelf {
				j++
			}
			dst = append(dst, raw[i:j]...)
			i = j
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, raw[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

// hex4 reads the four hex digits jscan.str validated.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// appendQuoted appends s as json.Marshal writes a string, quotes included.
func appendQuoted(dst []byte, s string) []byte { return jsontext.AppendString(dst, s, true) }
