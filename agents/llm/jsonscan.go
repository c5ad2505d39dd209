package llm

import (
	"bytes"
	"encoding/json"

	"github.com/mgrpo/mgrpo/internal/jsonfast"
)

// jscan is the fast decoders' JSON scanner (see jsonfast.Scanner: strict,
// never panics, gives up instead of erring, so its callers then decode the
// body with encoding/json, whose result or error is authoritative), with
// the client's own readers for token-heavy fields.
type jscan struct {
	jsonfast.Scanner
	// prefix, when set, lets promptIDs copy known prompt ids; promptText
	// is the text of the last array promptIDs read (a slice of B), and
	// promptKnown how many of its first bytes were the prefix's text.
	prefix      *PromptPrefix
	promptText  []byte
	promptKnown int
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
