package llm

import (
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
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

// jsonSafe marks the ASCII bytes encoding/json writes unescaped with HTML
// escaping on (json.Marshal's default): not a control character, quote,
// backslash, <, > or &.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

const lowerHex = "0123456789abcdef"

// load8 reads the first eight bytes of s little-endian (one load).
func load8(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// escapeAt returns the index of the first byte of w (eight bytes read
// little-endian) that jsonSafe does not mark, 8 when there is none.
func escapeAt(w uint64) int {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	// Each term flags the bytes below 0x20, non-ASCII, or equal to one of
	// the five characters. A zero-byte test can also flag bytes above a
	// flagged one (a borrow), never below, so the lowest flag is exact.
	m := w | (w-0x20*ones)&^w
	x := w ^ '"'*ones
	m |= (x - ones) &^ x
	x = w ^ '\\'*ones
	m |= (x - ones) &^ x
	x = w ^ '<'*ones
	m |= (x - ones) &^ x
	x = w ^ '>'*ones
	m |= (x - ones) &^ x
	x = w ^ '&'*ones
	m |= (x - ones) &^ x
	return bits.TrailingZeros64(m&high) >> 3
}

// appendQuoted appends s as json.Marshal writes a string, quotes included:
// HTML-escaped, control characters as short escapes or \u00XX, invalid
// UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Skip runs of bytes that need no escape eight at a time: message
		// texts are mostly such runs.
		if len(s)-i >= 8 {
			if n := escapeAt(load8(s[i:])); n > 0 {
				i += n
				continue
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', lowerHex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
