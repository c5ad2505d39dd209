package llm

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonDec is a strict, reflection-free JSON reader for the fast request
// decoders. It accepts only RFC 8259 JSON and gives up (returns false) on
// anything it is not sure to read exactly as encoding/json would; its
// callers then decode the body with encoding/json, whose result or error is
// the authoritative one. It never panics.
type jsonDec struct {
	b []byte
	i int
}

// maxDecDepth bounds the nesting skipValue follows; deeper values go to
// encoding/json.
const maxDecDepth = 100

// ws skips JSON whitespace.
func (d *jsonDec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next byte after whitespace, or 0 at the end.
func (d *jsonDec) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// eat consumes c when it is the next byte after whitespace.
func (d *jsonDec) eat(c byte) bool {
	if d.peek() == c {
		d.i++
		return true
	}
	return false
}

// word consumes the literal w (true, false or null) when it comes next.
func (d *jsonDec) word(w string) bool {
	d.ws()
	if len(d.b)-d.i >= len(w) && string(d.b[d.i:d.i+len(w)]) == w {
		d.i += len(w)
		return true
	}
	return false
}

// null consumes a null literal when it comes next.
func (d *jsonDec) null() bool { return d.word("null") }

// bool reads true or false.
func (d *jsonDec) bool() (v, ok bool) {
	switch {
	case d.word("true"):
		return true, true
	case d.word("false"):
		return false, true
	}
	return false, false
}

// key reads an object member name followed by its colon. Names holding
// escapes or non-ASCII bytes are refused: the fast decoders know only plain
// names. The returned bytes alias the input.
func (d *jsonDec) key() ([]byte, bool) {
	if d.peek() != '"' {
		return nil, false
	}
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		c := d.b[j]
		if c == '"' {
			d.i = j + 1
			if !d.eat(':') {
				return nil, false
			}
			return d.b[start:j], true
		}
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			return nil, false
		}
	}
	return nil, false
}

// str reads a JSON string into a Go string as encoding/json does. Strings
// with invalid UTF-8 or unpaired surrogate escapes (which encoding/json
// replaces by U+FFFD) are refused.
func (d *jsonDec) str() (string, bool) {
	if d.peek() != '"' {
		return "", false
	}
	start := d.i + 1
	j := start
	plain := true // no escapes
	for {
		// Eight bytes at a time up to the block holding a stop, then
		// byte by byte to the stop itself.
		for j+8 <= len(d.b) && !hasStringStop(binary.LittleEndian.Uint64(d.b[j:])) {
			j += 8
		}
		for j < len(d.b) && !strStops[d.b[j]] {
			j++
		}
		if j >= len(d.b) || d.b[j] < 0x20 {
			return "", false
		}
		if d.b[j] == '"' {
			break
		}
		// A backslash: skip the escaped byte; unescape checks the escape.
		plain = false
		j += 2
	}
	raw := d.b[start:j]
	// Escapes are ASCII, so the raw text is valid UTF-8 exactly when the
	// text between its escapes is.
	if !utf8.Valid(raw) {
		return "", false
	}
	d.i = j + 1
	if plain {
		return string(raw), true
	}
	return unescape(raw)
}

// strStops marks the bytes that end a run of plain string text: the
// closing quote, a backslash and the control characters JSON forbids.
var strStops = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// hasStringStop reports whether any of the eight bytes of x is a strStops
// byte, with the classic zero-byte tests: a byte of x^c is zero where x
// holds c, and (x-n)&^x sets a byte's top bit where that byte of x is below
// n (n ≤ 0x80), exactly and never for a byte from 0x80 up.
func hasStringStop(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote, backslash := x^(ones*'"'), x^(ones*'\\')
	return ((quote-ones)&^quote|(backslash-ones)&^backslash|(x-ones*0x20)&^x)&highs != 0
}

// unescape decodes the body of a JSON string holding escapes, refusing
// escapes encoding/json would reject or repair.
func unescape(raw []byte) (string, bool) {
	var out strings.Builder
	out.Grow(len(raw)) // an escape is never shorter than what it stands for
	for j := 0; j < len(raw); {
		k := bytes.IndexByte(raw[j:], '\\')
		if k < 0 {
			k = len(raw)
		} else {
			k += j
		}
		out.Write(raw[j:k])
		if k == len(raw) {
			break
		}
		j = k
		if j+1 >= len(raw) {
			return "", false
		}
		switch e := raw[j+1]; e {
		case '"', '\\', '/':
			out.WriteByte(e)
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			r, ok := hex4(raw[j+2:])
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				if len(raw) < j+12 || raw[j+6] != '\\' || raw[j+7] != 'u' {
					return "", false
				}
				r2, ok := hex4(raw[j+8:])
				if !ok {
					return "", false
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return "", false
				}
				j += 6
			}
			out.WriteRune(r)
			j += 4
		default:
			return "", false
		}
		j += 2
	}
	return out.String(), true
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}

// number reads a JSON number and returns its text, aliasing the input.
func (d *jsonDec) number() ([]byte, bool) {
	d.ws()
	start, j := d.i, d.i
	digits := func() bool {
		k := j
		for j < len(d.b) && '0' <= d.b[j] && d.b[j] <= '9' {
			j++
		}
		return j > k
	}
	if j < len(d.b) && d.b[j] == '-' {
		j++
	}
	switch {
	case j < len(d.b) && d.b[j] == '0':
		j++
	case !digits():
		return nil, false
	}
	if j < len(d.b) && d.b[j] == '.' {
		j++
		if !digits() {
			return nil, false
		}
	}
	if j < len(d.b) && (d.b[j] == 'e' || d.b[j] == 'E') {
		j++
		if j < len(d.b) && (d.b[j] == '+' || d.b[j] == '-') {
			j++
		}
		if !digits() {
			return nil, false
		}
	}
	d.i = j
	return d.b[start:j], true
}

// int reads a number into an int as encoding/json does: a fraction, an
// exponent or an overflow is its type error, so they are refused.
func (d *jsonDec) int() (int, bool) {
	lit, ok := d.number()
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(lit), 10, strconv.IntSize)
	return int(n), err == nil
}

// int64 is int for an int64 field.
func (d *jsonDec) int64() (int64, bool) {
	lit, ok := d.number()
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	return n, err == nil
}

// float reads a number into a float64 as encoding/json does; values out of
// range are its error, so they are refused.
func (d *jsonDec) float() (float64, bool) {
	lit, ok := d.number()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	return f, err == nil
}

// skipValue validates one JSON value and returns its text (without the
// whitespace around it), aliasing the input.
func (d *jsonDec) skipValue() ([]byte, bool) {
	d.ws()
	start := d.i
	if !d.skip(0) {
		return nil, false
	}
	return d.b[start:d.i], true
}

func (d *jsonDec) skip(depth int) bool {
	if depth > maxDecDepth {
		return false
	}
	switch d.peek() {
	case '"':
		return d.skipString()
	case '{':
		d.i++
		if d.eat('}') {
			return true
		}
		for {
			if !d.skipString() || !d.eat(':') || !d.skip(depth+1) {
				return false
			}
			if d.eat('}') {
				return true
			}
			if !d.eat(',') {
				return false
			}
		}
	case '[':
		d.i++
		if d.eat(']') {
			return true
		}
		for {
			if !d.skip(depth + 1) {
				return false
			}
			if d.eat(']') {
				return true
			}
			if !d.eat(',') {
				return false
			}
		}
	case 't':
		return d.word("true")
	case 'f':
		return d.word("false")
	case 'n':
		return d.null()
	default:
		_, ok := d.number()
		return ok
	}
}

// skipString validates a string as the JSON grammar has it (any bytes but
// control characters, valid escapes).
func (d *jsonDec) skipString() bool {
	if d.peek() != '"' {
		return false
	}
	for j := d.i + 1; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if j+1 >= len(d.b) {
				return false
			}
			switch d.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if _, ok := hex4(d.b[j+2:]); !ok {
					return false
				}
				j += 5
			default:
				return false
			}
		}
	}
	return false
}

// end reports whether only whitespace is left.
func (d *jsonDec) end() bool {
	d.ws()
	return d.i == len(d.b)
}
