package jsonfast

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Scanner reads strict RFC 8259 JSON from B, starting at I, for the
// client's hand-written decoders of answers. They fall back to
// encoding/json whenever they are unsure, so every method reports failure
// (false) rather than an error, accepts nothing encoding/json would
// reject, and never panics on any input.
type Scanner struct {
	B []byte
	I int
}

// MaxDepth bounds the nesting Skip follows; deeper values are left to
// encoding/json.
const MaxDepth = 64

// WS skips JSON whitespace.
func (s *Scanner) WS() {
	for s.I < len(s.B) {
		switch s.B[s.I] {
		case ' ', '\t', '\n', '\r':
			s.I++
		default:
			return
		}
	}
}

// Peek returns the next byte after whitespace, or 0 at the end.
func (s *Scanner) Peek() byte {
	s.WS()
	if s.I < len(s.B) {
		return s.B[s.I]
	}
	return 0
}

// Eat consumes c when it is the next byte after whitespace.
func (s *Scanner) Eat(c byte) bool {
	if s.Peek() == c {
		s.I++
		return true
	}
	return false
}

// Lit consumes the literal word (true, false or null) when it comes next.
func (s *Scanner) Lit(word string) bool {
	s.WS()
	if len(s.B)-s.I >= len(word) && string(s.B[s.I:s.I+len(word)]) == word {
		s.I += len(word)
		return true
	}
	return false
}

// Null consumes null when it comes next.
func (s *Scanner) Null() bool { return s.Lit("null") }

// Bool reads true or false.
func (s *Scanner) Bool() (v, ok bool) {
	switch {
	case s.Lit("true"):
		return true, true
	case s.Lit("false"):
		return false, true
	}
	return false, false
}

// Str consumes a string and returns its raw contents (between the quotes,
// aliasing B) and whether they need more than a copy to become the Go
// string encoding/json decodes: an escape, or invalid UTF-8 to replace.
// Escapes are validated; control characters are refused.
func (s *Scanner) Str() (raw []byte, special bool, ok bool) {
	if s.Peek() != '"' {
		return nil, false, false
	}
	b := s.B
	start := s.I + 1
	j := start
	for {
		// Eight bytes at a time up to the block holding a stop, then byte
		// by byte to the stop itself.
		for j+8 <= len(b) && !hasStringStop(binary.LittleEndian.Uint64(b[j:])) {
			j += 8
		}
		for j < len(b) && b[j] >= 0x20 && b[j] != '"' && b[j] != '\\' {
			j++
		}
		if j >= len(b) {
			return nil, false, false
		}
		switch c := b[j]; {
		case c == '"':
			s.I = j + 1
			raw = b[start:j]
			// Escapes are ASCII, so only the text between them can be
			// invalid UTF-8.
			return raw, special || !utf8.Valid(raw), true
		case c == '\\':
			special = true
			if j+1 >= len(b) {
				return nil, false, false
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if len(b)-j < 6 || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) || !isHex(b[j+5]) {
					return nil, false, false
				}
				j += 6
			default:
				return nil, false, false
			}
		default: // a control character
			return nil, false, false
		}
	}
}

// hasStringStop reports whether any of the eight bytes of x ends a run of
// plain string text: a quote, a backslash or a control character. A byte
// of x^c is zero where x holds c, and (x-n)&^x sets a byte's top bit where
// that byte of x is below n (n ≤ 0x80), exactly for the lowest such byte
// and never for a byte from 0x80 up, so the answer is exact.
func hasStringStop(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote, backslash := x^(ones*'"'), x^(ones*'\\')
	return ((quote-ones)&^quote|(backslash-ones)&^backslash|(x-ones*0x20)&^x)&highs != 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Key consumes an object member name and the colon after it. Names with
// escapes or bytes outside ASCII are refused: encoding/json unescapes and
// case-folds them (Unicode folding included) in ways not worth repeating.
func (s *Scanner) Key() ([]byte, bool) {
	// Member names are short printable ASCII: one pass up to the closing
	// quote checks that, without Str's block scan and UTF-8 validation.
	if s.Peek() == '"' {
		b, start := s.B, s.I+1
		j := start
		for j < len(b) && b[j] >= 0x20 && b[j] < utf8.RuneSelf && b[j] != '"' && b[j] != '\\' {
			j++
		}
		if j < len(b) && b[j] == '"' {
			s.I = j + 1
			if !s.Eat(':') {
				return nil, false
			}
			return b[start:j], true
		}
	}
	raw, special, ok := s.Str()
	if !ok || special || !s.Eat(':') {
		return nil, false
	}
	for _, c := range raw {
		if c >= utf8.RuneSelf {
			return nil, false
		}
	}
	return raw, true
}

// Text consumes a string and returns it as encoding/json decodes it into a
// Go string (escapes resolved; invalid UTF-8 and unpaired surrogates as
// U+FFFD).
func (s *Scanner) Text() (string, bool) {
	raw, special, ok := s.Str()
	if !ok {
		return "", false
	}
	if !special {
		return string(raw), true
	}
	// Unescaping never lengthens the text (U+FFFD for one invalid byte is
	// the exception, hence append's growth): the buffer is made once and
	// becomes the string without a copy, as strings.Builder does; nothing
	// else holds it.
	buf := AppendUnquoted(make([]byte, 0, len(raw)), raw)
	if len(buf) == 0 {
		return "", true
	}
	return unsafe.String(&buf[0], len(buf)), true
}

// Number consumes a number and returns its text (aliasing B) and whether
// it is an integer (no fraction, no exponent).
func (s *Scanner) Number() (lit []byte, integer bool, ok bool) {
	s.WS()
	b, start, i := s.B, s.I, s.I
	digits := func() bool {
		k := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > k
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return nil, false, false
	}
	integer = true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		if !digits() {
			return nil, false, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return nil, false, false
		}
	}
	s.I = i
	return b[start:i], integer, true
}

// Int64 consumes an integer that fits an int64 (seeds use the whole
// range); anything else — a fraction, an exponent, an overflow — is
// refused, as encoding/json refuses it for an int64 field.
func (s *Scanner) Int64() (int64, bool) {
	s.WS()
	b, i := s.B, s.I
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	d := i
	var n uint64
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		if i-d >= 19 { // a 20th digit overflows whatever it is
			return 0, false
		}
		n = n*10 + uint64(b[i]-'0')
		i++
	}
	switch digits := i - d; {
	case digits == 0:
		return 0, false
	case digits > 1 && b[d] == '0':
		return 0, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, false
	}
	// 19 digits fit a uint64; the int64 range is one wider below zero.
	if !neg && n > math.MaxInt64 || neg && n > math.MaxInt64+1 {
		return 0, false
	}
	s.I = i
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

// Int is Int64 for an int, refusing values an int cannot hold.
func (s *Scanner) Int() (int, bool) {
	i := s.I
	n, ok := s.Int64()
	if !ok || int64(int(n)) != n {
		s.I = i
		return 0, false
	}
	return int(n), true
}

// Float consumes a number and parses it as encoding/json does for a
// float64; values out of range are refused.
func (s *Scanner) Float() (float64, bool) {
	lit, _, ok := s.Number()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	return f, err == nil
}

// Skip consumes and validates any value nested depth levels deep.
func (s *Scanner) Skip(depth int) bool {
	switch s.Peek() {
	case '{':
		if depth >= MaxDepth {
			return false
		}
		s.I++
		if s.Eat('}') {
			return true
		}
		for {
			if _, _, ok := s.Str(); !ok || !s.Eat(':') || !s.Skip(depth+1) {
				return false
			}
			if s.Eat(',') {
				continue
			}
			return s.Eat('}')
		}
	case '[':
		if depth >= MaxDepth {
			return false
		}
		s.I++
		if s.Eat(']') {
			return true
		}
		for {
			if !s.Skip(depth + 1) {
				return false
			}
			if s.Eat(',') {
				continue
			}
			return s.Eat(']')
		}
	case '"':
		_, _, ok := s.Str()
		return ok
	case 't':
		return s.Lit("true")
	case 'f':
		return s.Lit("false")
	case 'n':
		return s.Lit("null")
	default:
		_, _, ok := s.Number()
		return ok
	}
}

// SkipValue validates one value and returns its text without the
// whitespace around it (aliasing B).
func (s *Scanner) SkipValue() ([]byte, bool) {
	s.WS()
	start := s.I
	if !s.Skip(0) {
		return nil, false
	}
	return s.B[start:s.I], true
}

// End reports whether only whitespace is left.
func (s *Scanner) End() bool {
	s.WS()
	return s.I == len(s.B)
}

// AppendUnquoted appends the Go string encoding/json decodes from raw, the
// contents of a JSON string that Scanner.Str has validated: escapes are
// resolved, and each invalid UTF-8 byte and each unpaired surrogate escape
// becomes U+FFFD.
func AppendUnquoted(dst, raw []byte) []byte {
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
		default:
			// The text up to the next escape (found with memchr) is copied
			// at once when it is valid UTF-8, the common case; otherwise
			// rune by rune, each invalid byte as U+FFFD.
			j := bytes.IndexByte(raw[i:], '\\')
			if j < 0 {
				j = len(raw)
			} else {
				j += i
			}
			chunk := raw[i:j]
			i = j
			if utf8.Valid(chunk) {
				dst = append(dst, chunk...)
				continue
			}
			for k := 0; k < len(chunk); {
				r, size := utf8.DecodeRune(chunk[k:])
				if r == utf8.RuneError && size == 1 {
					dst = append(dst, "\uFFFD"...)
				} else {
					dst = append(dst, chunk[k:k+size]...)
				}
				k += size
			}
		}
	}
	return dst
}

// hex4 reads the four hex digits Scanner.Str validated.
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
