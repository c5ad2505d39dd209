package jsonfast

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// memberKeys walks in's top-level object, skipping each value, and returns
// the names and the error the walk yielded.
func memberKeys(in string) ([]string, error) {
	s := Scanner{B: []byte(in)}
	var keys []string
	for key, err := range s.Members() {
		if err != nil {
			return keys, err
		}
		keys = append(keys, string(key))
		if !s.Skip(0) {
			return keys, errors.New("value")
		}
	}
	return keys, nil
}

func TestMembers(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		err      error
	}{
		{"empty", `{}`, nil, nil},
		{"spaced empty", " { \n} ", nil, nil},
		{"one", `{"a":1}`, []string{"a"}, nil},
		{"several", `{"a":1, "b" : [2,3], "c":{"d":null}}`, []string{"a", "b", "c"}, nil},
		{"duplicate", `{"a":1,"a":2}`, []string{"a", "a"}, nil},
		{"empty name", `{"":true}`, []string{""}, nil},
		{"escaped name", `{"a":1,"\u0062":2}`, []string{"a"}, ErrEscapedKey},
		{"escaped quote", `{"a\"b":2}`, nil, ErrEscapedKey},
		{"non-ASCII name", `{"é":2}`, nil, ErrEscapedKey},
		{"missing colon", `{"a" 1}`, nil, ErrSyntax},
		{"trailing comma", `{"a":1,}`, []string{"a"}, ErrSyntax},
		{"missing brace", `{"a":1`, []string{"a"}, ErrSyntax},
		{"missing comma", `{"a":1 "b":2}`, []string{"a"}, ErrSyntax},
		{"unquoted name", `{a:1}`, nil, ErrSyntax},
		{"unterminated name", `{"a`, nil, ErrSyntax},
		{"array", `[1]`, nil, ErrSyntax},
		{"null", `null`, nil, ErrSyntax},
		{"nothing", ``, nil, ErrSyntax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := memberKeys(tc.in)
			if !slices.Equal(got, tc.want) || err != tc.err {
				t.Errorf("Members(%q) = %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}

// TestMembersLeavesValue checks that each name is yielded with the scanner
// at its value, and that breaking off leaves the scanner there.
func TestMembersLeavesValue(t *testing.T) {
	s := Scanner{B: []byte(`{"a": 12, "b": "x", "c": 3}`)}
	var vals []string
	for key, err := range s.Members() {
		if err != nil {
			t.Fatal(err)
		}
		v, ok := s.SkipValue()
		if !ok {
			t.Fatalf("value of %s: not a value", key)
		}
		vals = append(vals, string(v))
		if string(key) == "b" {
			break
		}
	}
	if want := []string{"12", `"x"`}; !slices.Equal(vals, want) {
		t.Errorf("values = %q, want %q", vals, want)
	}
	if rest := string(s.B[s.I:]); rest != `, "c": 3}` {
		t.Errorf("after break the scanner is at %q", rest)
	}
}

// elementCount walks in's top-level array, skipping each element.
func elementCount(in string) (int, error) {
	s := Scanner{B: []byte(in)}
	n := 0
	for i, err := range s.Elements() {
		if err != nil {
			return n, err
		}
		if i != n {
			return n, errors.New("index " + strconv.Itoa(i) + " for element " + strconv.Itoa(n))
		}
		n++
		if !s.Skip(0) {
			return n, errors.New("element")
		}
	}
	return n, nil
}

func TestElements(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int
		err      error
	}{
		{"empty", `[]`, 0, nil},
		{"spaced empty", " [ \t] ", 0, nil},
		{"one", `[1]`, 1, nil},
		{"mixed", `[1, "a", {"b":[]}, [null], true]`, 5, nil},
		{"trailing comma", `[1,]`, 2, errors.New("element")},
		{"missing bracket", `[1, 2`, 2, ErrSyntax},
		{"missing comma", `[1 2]`, 1, ErrSyntax},
		{"leading comma", `[,1]`, 1, errors.New("element")},
		{"object", `{}`, 0, ErrSyntax},
		{"null", `null`, 0, ErrSyntax},
		{"nothing", ``, 0, ErrSyntax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := elementCount(tc.in)
			if got != tc.want || (err == nil) != (tc.err == nil) || err != nil && err.Error() != tc.err.Error() {
				t.Errorf("Elements(%q) = %d, %v; want %d, %v", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}

// TestWalkNil checks a scanner with no input and the nil and escaped
// cases the callers' fallback rules rest on.
func TestWalkNil(t *testing.T) {
	var s Scanner
	for key, err := range s.Members() {
		if key != nil || err != ErrSyntax {
			t.Errorf("Members on nil input yielded %q, %v; want nil, ErrSyntax", key, err)
		}
	}
	for i, err := range s.Elements() {
		if i != 0 || err != ErrSyntax {
			t.Errorf("Elements on nil input yielded %d, %v; want 0, ErrSyntax", i, err)
		}
	}
	// An escaped name that encoding/json reads as a plain one still
	// reaches the caller as not sure.
	s = Scanner{B: []byte(`{"\u0061":1}`)}
	for key, err := range s.Members() {
		if key != nil || err != ErrEscapedKey {
			t.Errorf("Members yielded %q, %v; want nil, ErrEscapedKey", key, err)
		}
	}
}

// walkTrace is the shape of the value at s as Members and Elements see
// it: objects as {"name"=value,…}, arrays as [value,…], scalars as v. Its
// result is "" with err set when the walk failed, and unsure when it gave
// up short of a verdict (an escaped name, too deep a nesting).
func walkTrace(s *Scanner, depth int) (trace string, unsure bool, err error) {
	if depth > 32 {
		return "", true, nil
	}
	var b strings.Builder
	switch s.Peek() {
	case '{':
		b.WriteByte('{')
		for key, err := range s.Members() {
			if err == ErrEscapedKey {
				return "", true, nil
			}
			if err != nil {
				return "", false, err
			}
			if b.Len() > 1 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(string(key)) + "=")
			v, unsure, err := walkTrace(s, depth+1)
			if unsure || err != nil {
				return "", unsure, err
			}
			b.WriteString(v)
		}
		b.WriteByte('}')
	case '[':
		b.WriteByte('[')
		for i, err := range s.Elements() {
			if err != nil {
				return "", false, err
			}
			if i > 0 {
				b.WriteByte(',')
			}
			v, unsure, err := walkTrace(s, depth+1)
			if unsure || err != nil {
				return "", unsure, err
			}
			b.WriteString(v)
		}
		b.WriteByte(']')
	default:
		if !s.Skip(0) {
			return "", false, errors.New("scalar")
		}
		b.WriteByte('v')
	}
	return b.String(), false, nil
}

// jsonTrace is walkTrace's shape from encoding/json's tokens of one valid
// value.
func jsonTrace(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return "v", nil
	}
	var b strings.Builder
	b.WriteString(d.String())
	for i := 0; dec.More(); i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if d == '{' {
			key, err := dec.Token()
			if err != nil {
				return "", err
			}
			b.WriteString(strconv.Quote(key.(string)) + "=")
		}
		v, err := jsonTrace(dec)
		if err != nil {
			return "", err
		}
		b.WriteString(v)
	}
	end, err := dec.Token()
	if err != nil {
		return "", err
	}
	b.WriteString(end.(json.Delim).String())
	return b.String(), nil
}

// FuzzWalk holds Members and Elements to encoding/json: on an input they
// walk to the end, encoding/json finds the same names and elements; on one
// they refuse, it errs too, unless they were not sure (an escaped or
// non-ASCII name).
func FuzzWalk(f *testing.F) {
	for _, in := range []string{
		`{}`, `[]`, `{"a":1,"b":[true,null,{"c":"d"}]}`, `[[],[{}],[1,2,3]]`, `{"a":1,}`, `[1,]`,
		`{"\u0061":1}`, `{"é":[]}`, `{"a" 1}`, `{"a":1}{}`, ` [ 1 , 2 ] `, `{"a":[1,{"b":2}],"a":{}}`, `[1 2]`, `"x"`, `0`,
	} {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s := Scanner{B: in}
		trace, unsure, err := walkTrace(&s, 0)
		if unsure {
			escaped := bytes.IndexByte(in, '\\') >= 0 || slices.ContainsFunc(in, func(c byte) bool { return c >= 0x80 })
			if deep := bytes.Count(in, []byte("{"))+bytes.Count(in, []byte("[")) > 32; !escaped && !deep {
				t.Fatalf("walk of %q was not sure without an escape, a non-ASCII byte or nesting", in)
			}
			return
		}
		valid := json.Valid(in)
		if err == nil && !s.End() {
			err = errors.New("trailing data")
		}
		if err != nil {
			if valid {
				t.Fatalf("walk of %q: %v; encoding/json takes it", in, err)
			}
			return
		}
		if !valid {
			t.Fatalf("walk of %q took %s; encoding/json refuses it", in, trace)
		}
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		want, err := jsonTrace(dec)
		if err != nil {
			t.Fatalf("encoding/json tokens of %q: %v", in, err)
		}
		if _, err := dec.Token(); err != io.EOF {
			t.Fatalf("encoding/json tokens of %q: more after the value (%v)", in, err)
		}
		if trace != want {
			t.Fatalf("walk of %q = %s; encoding/json reads %s", in, trace, want)
		}
	})
}
