package llm

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/mgrpo/mgrpo/internal/jsonfast"
)

// jscan is the fast decoders' JSON scanner (see jsonfast.Scanner: strict,
// never panics, gives up instead of erring, so its callers then decode the
// body with encoding/json, whose result or error is authoritative), with
// the client's own readers for token-heavy fields.
type jscan struct {
	jsonfast.Scanner
	// prefix, when set, lets promptIDs copy known prompt ids; promptText
	// is the text of the last array promptIDs read (a slice of B).
	prefix     *PromptPrefix
	promptText []byte
	// why is the reason (a FallbackX) of the first refusal since the last
	// recovered one; handedMessage and handedMember record the members
	// given to encoding/json (see rest).
	why                         string
	handedMessage, handedMember bool
}

// fail records reason, unless an earlier refusal named one, and returns
// false, for a decoder to return.
func (s *jscan) fail(reason string) bool {
	if s.why == "" {
		s.why = reason
	}
	return false
}

// once marks bit in seen and reports whether it was clear: a second
// occurrence of an owned key makes the decoder give up (duplicate_key).
func (s *jscan) once(seen *uint, bit uint) bool {
	return once(seen, bit) || s.fail(FallbackDuplicateKey)
}

// fallbacks returns what the decode of body left to encoding/json: when
// taken is false, the whole body, for the recorded reason or, without
// one, syntax or shape depending on whether body is valid JSON.
func (s *jscan) fallbacks(body []byte, taken bool) fallbacks {
	if taken {
		return fallbacks{message: s.handedMessage, member: s.handedMember}
	}
	switch {
	case s.why != "":
		return fallbacks{body: s.why}
	case json.Valid(body):
		return fallbacks{body: FallbackShape}
	}
	return fallbacks{body: FallbackSyntax}
}

// fallbacks records what a fast decode left to encoding/json: the whole
// body (body names why, a FallbackX; "" when the fast decoder took it) or,
// while taking it, the message or other members, which encoding/json
// decoded as small objects.
type fallbacks struct {
	body            string
	message, member bool
}

// key consumes a member name and its colon as Key does, recording an
// escaped or non-ASCII name as escaped_key.
func (s *jscan) key() ([]byte, bool) {
	start := s.I
	if k, ok := s.Key(); ok {
		return k, true
	}
	s.I = start
	if raw, special, ok := s.Str(); ok && (special || !isASCII(raw)) {
		return nil, s.fail(FallbackEscapedKey)
	}
	return nil, false
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// text consumes a string value and returns it as encoding/json would
// decode it into a Go string; null is "".
func (s *jscan) text() (string, bool) {
	if s.Null() {
		return "", true
	}
	return s.Text()
}

// byteArray validates a value encoding/json would decode into a []byte
// without error and without surprises: null or an array of integers 0–255.
func (s *jscan) byteArray() bool {
	if s.Null() {
		return true
	}
	if !s.Eat('[') {
		return false
	}
	if s.Eat(']') {
		return true
	}
	for {
		v, ok := s.Int()
		if !ok || v < 0 || v > 255 {
			return false
		}
		if s.Eat(',') {
			continue
		}
		return s.Eat(']')
	}
}

// emptyArray consumes null or [].
func (s *jscan) emptyArray() bool {
	return s.Null() || s.Eat('[') && s.Eat(']')
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
