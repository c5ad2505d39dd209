package jsonfast

import (
	"errors"
	"iter"
)

// The errors Members and Elements yield when they stop short.
var (
	// ErrSyntax means the input is not an object (or array) there: a
	// missing bracket, comma, colon or name, or a malformed name.
	ErrSyntax = errors.New("jsonfast: malformed object or array")
	// ErrEscapedKey means a member name is a valid string that Key refuses
	// (an escape or a byte outside ASCII): the walk is not sure which field
	// encoding/json would match it to, so the caller applies its fallback.
	ErrEscapedKey = errors.New("jsonfast: member name needs unescaping")
)

// Members walks the object that comes next. For each member it yields the
// name (aliasing B, as Key returns it) and a nil error, leaving s at the
// value, which the loop body must consume before the next turn. The loop
// ends after the closing brace; a walk that cannot go on yields one last
// time with ErrSyntax or ErrEscapedKey (and a nil name) and ends.
func (s *Scanner) Members() iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		if !s.Eat('{') {
			yield(nil, ErrSyntax)
			return
		}
		if s.Eat('}') {
			return
		}
		for {
			start := s.I
			key, ok := s.Key()
			if !ok {
				yield(nil, s.keyError(start))
				return
			}
			if !yield(key, nil) {
				return
			}
			if s.Eat(',') {
				continue
			}
			if !s.Eat('}') {
				yield(nil, ErrSyntax)
			}
			return
		}
	}
}

// keyError tells why Key refused the name at start: ErrEscapedKey for a
// valid string with an escape or a byte outside ASCII, ErrSyntax otherwise.
func (s *Scanner) keyError(start int) error {
	s.I = start
	raw, special, ok := s.Str()
	if !ok {
		return ErrSyntax
	}
	if special {
		return ErrEscapedKey
	}
	for _, c := range raw {
		if c >= 0x80 {
			return ErrEscapedKey
		}
	}
	return ErrSyntax
}

// Elements walks the array that comes next. For each element it yields
// its index and a nil error, leaving s at the element, which the loop body
// must consume before the next turn. The loop ends after the closing
// bracket; a walk that cannot go on yields one last time with ErrSyntax
// and ends.
func (s *Scanner) Elements() iter.Seq2[int, error] {
	return func(yield func(int, error) bool) {
		if !s.Eat('[') {
			yield(0, ErrSyntax)
			return
		}
		if s.Eat(']') {
			return
		}
		for n := 0; ; n++ {
			if !yield(n, nil) {
				return
			}
			if s.Eat(',') {
				continue
			}
			if !s.Eat(']') {
				yield(n+1, ErrSyntax)
			}
			return
		}
	}
}
