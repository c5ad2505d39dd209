package llm

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// reqReader reads the JSON of a request body for decodeChatFast. It is the
// sim's own (see doc.go, "Independence") and deliberately plain: it reads
// RFC 8259 JSON one byte at a time and gives up on anything it is not sure
// encoding/json would decode the same way. Giving up is sticky: the first
// refusal sets bad, every later read is a no-op that returns a zero value,
// and the caller checks bad once at the end and then leaves the body to
// encoding/json. No input makes it panic or loop.
type reqReader struct {
	b   []byte
	i   int
	bad bool
}

// maxSkipDepth bounds the nesting skip follows; deeper values are left to
// encoding/json.
const maxSkipDepth = 100

// refuse gives up on the body.
func (r *reqReader) refuse() { r.bad = true }

// ws skips whitespace.
func (r *reqReader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// peek returns the next byte after whitespace, 0 at the end or once the
// reader has given up.
func (r *reqReader) peek() byte {
	r.ws()
	if r.bad || r.i == len(r.b) {
		return 0
	}
	return r.b[r.i]
}

// take consumes c if it comes next.
func (r *reqReader) take(c byte) bool {
	if r.peek() == c {
		r.i++
		return true
	}
	return false
}

// expect consumes c, or gives up.
func (r *reqReader) expect(c byte) {
	if !r.take(c) {
		r.refuse()
	}
}

// atEnd reports whether nothing but whitespace is left.
func (r *reqReader) atEnd() bool {
	r.ws()
	return r.i == len(r.b)
}

// word consumes the literal w (null, true or false) if it comes next.
func (r *reqReader) word(w string) bool {
	r.ws()
	if !r.bad && bytes.HasPrefix(r.b[r.i:], []byte(w)) {
		r.i += len(w)
		return true
	}
	return false
}

// null consumes null if it comes next.
func (r *reqReader) null() bool { return r.word("null") }

// boolean reads true or false.
func (r *reqReader) boolean() bool {
	switch {
	case r.word("true"):
		return true
	case r.word("false"):
		return false
	}
	r.refuse()
	return false
}

// inString marks the bytes that can stand for themselves inside a string:
// all but the quote, the backslash and the control characters. Bytes from
// 0x80 up are checked as UTF-8 afterwards, where it matters.
var inString = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// rawString reads a string and returns the bytes between its quotes
// (aliasing the body) and whether they are already the decoded text: no
// escape and valid UTF-8. Escapes are checked, not resolved.
func (r *reqReader) rawString() (raw []byte, verbatim bool) {
	if r.peek() != '"' {
		r.refuse()
		return nil, false
	}
	b := r.b
	start := r.i + 1
	escaped := false
	for j := start; j < len(b); {
		c := b[j]
		if inString[c] {
			j++
			continue
		}
		switch c {
		case '"':
			r.i = j + 1
			raw = b[start:j]
			return raw, !escaped && utf8.Valid(raw)
		case '\\':
			escaped = true
			if j+1 == len(b) {
				r.refuse()
				return nil, false
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(b) || !hex4Valid(b[j+2:j+6]) {
					r.refuse()
					return nil, false
				}
				j += 6
			default:
				r.refuse()
				return nil, false
			}
		default: // a control character, which JSON does not allow raw
			r.refuse()
			return nil, false
		}
	}
	r.refuse() // no closing quote
	return nil, false
}

// text reads a string and returns it as encoding/json decodes it into a Go
// string.
func (r *reqReader) text() string {
	raw, verbatim := r.rawString()
	switch {
	case r.bad:
		return ""
	case verbatim:
		return string(raw)
	}
	// Unescaping shortens the text except where U+FFFD replaces a single
	// byte, so one allocation nearly always holds it, and the Builder hands
	// it over as the string without a copy.
	var sb strings.Builder
	sb.Grow(len(raw))
	writeUnescaped(&sb, raw)
	return sb.String()
}

// name reads a member name and the colon after it. Only plain ASCII names
// are taken: encoding/json resolves escapes in names and matches them to
// fields ignoring case (Unicode case included), which is not repeated here.
func (r *reqReader) name() []byte {
	raw, verbatim := r.rawString()
	if !verbatim {
		r.refuse()
		return nil
	}
	for _, c := range raw {
		if c >= utf8.RuneSelf {
			r.refuse()
			return nil
		}
	}
	r.expect(':')
	return raw
}

// number reads a number as RFC 8259 writes it and returns its text
// (aliasing the body) and whether it has a fraction or an exponent.
func (r *reqReader) number() (lit []byte, fractional bool) {
	r.ws()
	if r.bad {
		return nil, false
	}
	b, start, j := r.b, r.i, r.i
	digits := func() int {
		k := j
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		return j - k
	}
	if j < len(b) && b[j] == '-' {
		j++
	}
	if j < len(b) && b[j] == '0' {
		j++ // a leading zero stands alone
	} else if digits() == 0 {
		r.refuse()
		return nil, false
	}
	if j < len(b) && b[j] == '.' {
		fractional = true
		j++
		if digits() == 0 {
			r.refuse()
			return nil, false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		fractional = true
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if digits() == 0 {
			r.refuse()
			return nil, false
		}
	}
	r.i = j
	return b[start:j], fractional
}

// integer reads a number into an integer of the given size in bits, as
// encoding/json does: a fraction, an exponent or an overflow is an error
// there, so here a refusal.
func (r *reqReader) integer(bitSize int) int64 {
	lit, fractional := r.number()
	if r.bad || fractional {
		r.refuse()
		return 0
	}
	v, err := strconv.ParseInt(string(lit), 10, bitSize)
	if err != nil {
		r.refuse()
	}
	return v
}

// float reads a number into a float64 as encoding/json does; out of range
// is an error there, so here a refusal.
func (r *reqReader) float() float64 {
	lit, _ := r.number()
	if r.bad {
		return 0
	}
	v, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		r.refuse()
	}
	return v
}

// skip checks one value of any kind and returns its text without the
// whitespace around it (aliasing the body).
func (r *reqReader) skip() []byte {
	r.ws()
	start := r.i
	r.skipAt(0)
	if r.bad {
		return nil
	}
	return r.b[start:r.i]
}

// skipAt checks one value nested depth levels deep.
func (r *reqReader) skipAt(depth int) {
	switch r.peek() {
	case '{', '[':
		if depth == maxSkipDepth {
			r.refuse()
			return
		}
		closer := byte('}')
		if r.b[r.i] == '[' {
			closer = ']'
		}
		r.i++
		if r.take(closer) {
			return
		}
		for !r.bad {
			if closer == '}' {
				r.rawString() // any name will do here, escaped or not
				r.expect(':')
			}
			r.skipAt(depth + 1)
			if !r.take(',') {
				r.expect(closer)
				return
			}
		}
	case '"':
		r.rawString()
	case 't':
		r.boolean()
	case 'f':
		r.boolean()
	case 'n':
		if !r.null() {
			r.refuse()
		}
	default:
		r.number()
	}
}

// object reads an object, calling member with each member's name to read
// its value; member must refuse names it does not know. A name given twice
// is refused (encoding/json merges some repeated members into one value).
func (r *reqReader) object(member func(name []byte)) {
	r.expect('{')
	if r.bad || r.take('}') {
		return
	}
	// Every name taken is one of the few a member func knows, so a small
	// fixed list holds them all; more than that is refused.
	var seen [32][]byte
	n := 0
	for !r.bad {
		k := r.name()
		if r.bad {
			return
		}
		for _, s := range seen[:n] {
			if bytes.Equal(s, k) {
				r.refuse()
				return
			}
		}
		if n == len(seen) {
			r.refuse()
			return
		}
		seen[n] = k
		n++
		member(k)
		if !r.take(',') {
			r.expect('}')
			return
		}
	}
}

// readList reads null (a nil slice, as encoding/json decodes it) or a
// list, each element with elem; [] is an empty, non-nil slice. Null
// elements are refused: encoding/json keeps a zero element for them, which
// no client means to send.
func readList[T any](r *reqReader, p *[]T, elem func(*T)) {
	if r.null() {
		*p = nil
		return
	}
	r.expect('[')
	if r.bad {
		return
	}
	out := make([]T, 0, 4)
	if r.take(']') {
		*p = out
		return
	}
	for !r.bad {
		if r.peek() == 'n' {
			r.refuse()
			return
		}
		out = append(out, *new(T))
		elem(&out[len(out)-1])
		if !r.take(',') {
			r.expect(']')
			break
		}
	}
	if !r.bad {
		*p = out
	}
}

// hex4Valid reports whether b holds four hex digits.
func hex4Valid(b []byte) bool {
	for _, c := range b[:4] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// hex4 reads the four hex digits at the start of b, which hex4Valid
// accepted.
func hex4(b []byte) rune {
	var v rune
	for _, c := range b[:4] {
		switch {
		case c >= 'a':
			c -= 'a' - 10
		case c >= 'A':
			c -= 'A' - 10
		default:
			c -= '0'
		}
		v = v<<4 | rune(c)
	}
	return v
}

// writeUnescaped writes the text of a string whose contents raw rawString
// accepted, as encoding/json decodes it: escapes resolved; a \uXXXX
// surrogate pair as one rune, any other surrogate escape as U+FFFD; each
// byte that is not part of valid UTF-8 as U+FFFD.
func writeUnescaped(sb *strings.Builder, raw []byte) {
	for len(raw) > 0 {
		k := bytes.IndexByte(raw, '\\')
		if k < 0 {
			writeRepairedUTF8(sb, raw)
			return
		}
		writeRepairedUTF8(sb, raw[:k])
		e := raw[k+1]
		raw = raw[k+2:]
		if e != 'u' {
			sb.WriteByte(unescapedByte(e))
			continue
		}
		c := hex4(raw)
		raw = raw[4:]
		if utf16.IsSurrogate(c) {
			pair := utf8.RuneError
			if len(raw) >= 6 && raw[0] == '\\' && raw[1] == 'u' && hex4Valid(raw[2:6]) {
				pair = utf16.DecodeRune(c, hex4(raw[2:6]))
			}
			if pair != utf8.RuneError {
				raw = raw[6:] // the second half is taken with the first
			}
			c = pair
		}
		sb.WriteRune(c)
	}
}

// unescapedByte is the byte a one-letter escape stands for.
func unescapedByte(e byte) byte {
	switch e {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return e // '"', '\\' and '/' stand for themselves
}

// writeRepairedUTF8 writes s with each byte that is not part of valid
// UTF-8 replaced by U+FFFD, as encoding/json repairs decoded strings.
func writeRepairedUTF8(sb *strings.Builder, s []byte) {
	if utf8.Valid(s) {
		sb.Write(s)
		return
	}
	for len(s) > 0 {
		c, n := utf8.DecodeRune(s)
		if c == utf8.RuneError && n == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(s[:n])
		}
		s = s[n:]
	}
}
