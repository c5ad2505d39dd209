package llm

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// jscan is a small strict JSON scanner over a response body, used by the
// fast decoders for the token-heavy fields (id arrays, logprob lists). It
// accepts exactly RFC 8259 JSON, like encoding/json, and reports anything it
// is not sure of as a failure (false) rather than an error: its callers then
// decode the body with encoding/json, which gives the authoritative result
// or error. It never panics on any input.
type jscan struct {
	b []byte
	i int
	// tmp is text's buffer for decoding escaped strings.
	tmp []byte
	// prefix, when set, lets promptIDs copy known prompt ids; promptText
	// is the text of the last array promptIDs read (a slice of b).
	prefix     *PromptPrefix
	promptText []byte
}

// maxScanDepth bounds the nesting skip follows; deeper values are left to
// encoding/json.
const maxScanDepth = 64

// ws skips JSON whitespace.
func (s *jscan) ws() {
	for s.i < len(s.b) && s.b[s.i] <= ' ' {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// eat consumes c after whitespace.
func (s *jscan) eat(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// peek reports the next non-space byte, or 0 at the end.
func (s *jscan) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// null consumes the literal null when it comes next.
func (s *jscan) null() bool {
	s.ws()
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// lit consumes the literal word.
func (s *jscan) lit(word string) bool {
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// str consumes a string and returns its raw contents (between the quotes)
// and whether they hold an escape or a byte outside ASCII. Escapes are
// validated; control characters are rejected.
func (s *jscan) str() (raw []byte, special bool, ok bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, false
	}
	s.i++
	start := s.i
	b := s.b
	for s.i < len(b) {
		// Plain ASCII runs, the common case, in a tight loop.
		i := s.i
		for i < len(b) && b[i] >= 0x20 && b[i] != '"' && b[i] != '\\' && b[i] < utf8.RuneSelf {
			i++
		}
		s.i = i
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			raw = b[start:i]
			s.i++
			return raw, special, true
		case c == '\\':
			special = true
			s.i++
			if s.i >= len(b) {
				return nil, false, false
			}
			switch b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if len(b)-s.i < 5 {
					return nil, false, false
				}
				for _, h := range b[s.i+1 : s.i+5] {
					if !isHex(h) {
						return nil, false, false
					}
				}
				s.i += 5
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		default:
			special = true
			s.i++
		}
	}
	return nil, false, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// key consumes an object key and the colon after it. Keys with escapes or
// bytes outside ASCII are refused: encoding/json unescapes and folds them
// in ways not worth repeating.
func (s *jscan) key() ([]byte, bool) {
	raw, special, ok := s.str()
	if !ok || special || !s.eat(':') {
		return nil, false
	}
	return raw, true
}

// text consumes a string value and returns it as encoding/json would
// decode it into a Go string; null is "".
func (s *jscan) text() (string, bool) {
	if s.null() {
		return "", true
	}
	raw, special, ok := s.str()
	if !ok {
		return "", false
	}
	if !special {
		return string(raw), true
	}
	s.tmp = appendUnquoted(s.tmp[:0], raw)
	return string(s.tmp), true
}

// number consumes a JSON number and returns its text and whether it is an
// integer (no fraction, no exponent).
func (s *jscan) number() (lit []byte, integer bool, ok bool) {
	s.ws()
	start := s.i
	b := s.b
	i := s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return nil, false, false
	}
	integer = true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		d := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false, false
		}
	}
	s.i = i
	return b[start:i], integer, true
}

// int consumes an integer of at most 18 digits (so it cannot overflow);
// anything else — a fraction, an exponent, a longer number — is refused.
func (s *jscan) int() (int, bool) {
	s.ws()
	b, i := s.b, s.i
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	d := i
	n := 0
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		n = n*10 + int(b[i]-'0')
		i++
	}
	switch digits := i - d; {
	case digits == 0 || digits > 18:
		return 0, false
	case digits > 1 && b[d] == '0':
		return 0, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, false
	}
	s.i = i
	if neg {
		n = -n
	}
	return n, true
}

// float consumes a number and parses it as encoding/json does for a
// float64.
func (s *jscan) float() (float64, bool) {
	lit, _, ok := s.number()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	return f, err == nil
}

// byteArray validates a value encoding/json would decode into a []byte
// without error and without surprises: null or an array of integers 0–255.
func (s *jscan) byteArray() bool {
	if s.null() {
		return true
	}
	if !s.eat('[') {
		return false
	}
	if s.eat(']') {
		return true
	}
	for {
		v, ok := s.int()
		if !ok || v < 0 || v > 255 {
			return false
		}
		if s.eat(',') {
			continue
		}
		return s.eat(']')
	}
}

// emptyArray consumes null or [].
func (s *jscan) emptyArray() bool {
	return s.null() || s.eat('[') && s.eat(']')
}

// skip consumes and validates any value.
func (s *jscan) skip(depth int) bool {
	switch s.peek() {
	case '{':
		if depth >= maxScanDepth {
			return false
		}
		s.i++
		if s.eat('}') {
			return true
		}
		for {
			if _, _, ok := s.str(); !ok || !s.eat(':') || !s.skip(depth+1) {
				return false
			}
			if s.eat(',') {
				continue
			}
			return s.eat('}')
		}
	case '[':
		if depth >= maxScanDepth {
			return false
		}
		s.i++
		if s.eat(']') {
			return true
		}
		for {
			if !s.skip(depth + 1) {
				return false
			}
			if s.eat(',') {
				continue
			}
			return s.eat(']')
		}
	case '"':
		_, _, ok := s.str()
		return ok
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	default:
		_, _, ok := s.number()
		return ok
	}
}

// end reports whether only whitespace is left.
func (s *jscan) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// restObject collects the members a fast decoder leaves to encoding/json,
// as the text of one JSON object.
type restObject struct{ buf []byte }

func (r *restObject) reset() { r.buf = append(r.buf[:0], '{') }

// add appends the member key: raw.
func (r *restObject) add(key, raw []byte) {
	if len(r.buf) > 1 {
		r.buf = append(r.buf, ',')
	}
	r.buf = append(r.buf, '"')
	r.buf = append(r.buf, key...)
	r.buf = append(r.buf, '"', ':')
	r.buf = append(r.buf, raw...)
}

// decode unmarshals the collected members into v; an empty object leaves v
// alone, as encoding/json would.
func (r *restObject) decode(v any) bool {
	if len(r.buf) <= 1 {
		return true
	}
	r.buf = append(r.buf, '}')
	return json.Unmarshal(r.buf, v) == nil
}

// foldsTo reports whether key is not one of names but matches one of them
// the way encoding/json matches keys to fields (ASCII case folding; keys
// outside ASCII never reach here). Such a key would fill a field the fast
// decoder owns, so it gives up.
func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if string(key) != n && bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}
