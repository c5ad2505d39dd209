// Package jsonfast holds the pieces of the client side's JSON fast paths:
// a strict scanner for hand-written decoders that fall back to
// encoding/json, and a string escaper that writes byte for byte what
// encoding/json writes, without its reflection. The client's request
// encoder and the sample writer hand-write JSON on hot paths and must match
// encoding/json exactly (requests are compared with golden files, samples
// with json.Marshal output); they share this one escaper. The sim must not
// use this package: it is the client's codec, which the sim is there to
// check (sim/llm's TestSimImportsNoClientPackage).
package jsonfast

import (
	"math/bits"
	"unicode/utf8"
)

// AppendString appends s as a JSON string, quotes included, exactly as
// encoding/json writes it: with escapeHTML (json.Marshal's default) <, >
// and & become \u003c, \u003e and \u0026; control characters become short
// escapes (\b \f \n \r \t) or \u00XX; each invalid UTF-8 byte becomes
// \ufffd; U+2028 and U+2029 are escaped.
func AppendString(dst []byte, s string, escapeHTML bool) []byte {
	safe := &plainSafe
	if escapeHTML {
		safe = &htmlSafe
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Skip runs of bytes that need no escape eight at a time: the texts
		// written are mostly such runs.
		if len(s)-i >= 8 {
			if n := escapeAt(load8(s[i:]), escapeHTML); n > 0 {
				i += n
				continue
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
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

// plainSafe marks the ASCII bytes written unescaped without HTML escaping:
// not a control character, quote or backslash; htmlSafe also excludes <, >
// and &.
var plainSafe, htmlSafe = func() (plain, html [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
		html[c] = plain[c] && c != '<' && c != '>' && c != '&'
	}
	return plain, html
}()

const lowerHex = "0123456789abcdef"

// load8 reads the first eight bytes of s little-endian (one load).
func load8(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// escapeAt returns the index of the first byte of w (eight bytes read
// little-endian) that needs an escape or a closer look (see plainSafe,
// htmlSafe; every non-ASCII byte), 8 when there is none.
func escapeAt(w uint64, escapeHTML bool) int {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	// Each term flags the bytes below 0x20, non-ASCII, or equal to one of
	// the special characters. A zero-byte test can also flag bytes above a
	// flagged one (a borrow), never below, so the lowest flag is exact.
	m := w | (w-0x20*ones)&^w
	x := w ^ '"'*ones
	m |= (x - ones) &^ x
	x = w ^ '\\'*ones
	m |= (x - ones) &^ x
	if escapeHTML {
		x = w ^ '<'*ones
		m |= (x - ones) &^ x
		x = w ^ '>'*ones
		m |= (x - ones) &^ x
		x = w ^ '&'*ones
		m |= (x - ones) &^ x
	}
	return bits.TrailingZeros64(m&high) >> 3
}
