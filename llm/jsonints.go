package llm

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// Token id arrays are most of a response: thousands of 1- to 6-digit ids.
// Parsing them a byte at a time costs a mispredicted branch per id, at the
// end of each digit run of unpredictable length; reading eight bytes at once
// finds the run's length and value with a few word operations instead.

// digitRun returns the number of ASCII digits at the start of w (eight
// bytes read little-endian, so the first byte is the lowest), 8 when all
// are digits.
func digitRun(w uint64) int {
	const hi = 0xF0F0F0F0F0F0F0F0
	// A digit byte 0x30–0x39 has high nibble 3 both as is and plus 6. A byte
	// of 0xFA or more carries into the next byte when 6 is added, but it is
	// not a digit, so the run ends before the byte it spoils.
	t := w&hi | (w+0x0606060606060606)&hi>>4
	nd := t ^ 0x3333333333333333
	// The high bit of each byte of m is set when that byte of nd is not 0.
	m := (nd&0x7F7F7F7F7F7F7F7F + 0x7F7F7F7F7F7F7F7F | nd) & 0x8080808080808080
	return bits.TrailingZeros64(m) >> 3
}

// commaAt returns the index of the first ',' in w (eight bytes read
// little-endian), 8 when there is none.
func commaAt(w uint64) int {
	x := w ^ 0x2C2C2C2C2C2C2C2C
	// The classic zero-byte test: exact for the lowest zero byte, which is
	// the only one used.
	m := (x - 0x0101010101010101) &^ x & 0x8080808080808080
	return bits.TrailingZeros64(m) >> 3
}

// digitsValue returns the value of the first n (1 to 7) bytes of w, which
// are ASCII digits.
func digitsValue(w uint64, n int) int {
	// Shifting the digits to the top leaves zero bytes below them, read as
	// leading zeros; each step then combines neighbouring groups.
	w <<= 8 * uint(8-n)
	w = (w & 0x0F0F0F0F0F0F0F0F) * (10<<8 + 1) >> 8
	w = (w & 0x00FF00FF00FF00FF) * (100<<16 + 1) >> 16
	w = (w & 0x0000FFFF0000FFFF) * (10000<<32 + 1) >> 32
	return int(w)
}

// int32 consumes an integer that fits an int32, as encoding/json decodes
// one into an int32 field: a value out of range is refused, and the
// caller's fallback to encoding/json reports it.
func (s *jscan) int32() (int32, bool) {
	i := s.I
	n, ok := s.Int64()
	if !ok || int64(int32(n)) != n {
		s.I = i
		return 0, false
	}
	return int32(n), true
}

// ints consumes an array of integers (or null, which is nil). Like
// encoding/json it returns an empty, non-nil slice for [].
func (s *jscan) ints() ([]int32, bool) {
	if s.Null() {
		return nil, true
	}
	if !s.Eat('[') {
		return nil, false
	}
	if s.Eat(']') {
		return []int32{}, true
	}
	return s.intElems(nil)
}

// intElems consumes an integer array's elements from the next one through
// the closing bracket and returns them after a copy of head.
func (s *jscan) intElems(head []int32) ([]int32, bool) {
	n := len(head) + s.remainingInts()
	out := make([]int32, len(head), n)
	copy(out, head)
	return s.appendIntElems(out)
}

// remainingInts returns how many elements an integer array has from the
// next one on (it ends at the first ']'), to size a slice once.
func (s *jscan) remainingInts() int {
	n := 1
	if end := bytes.IndexByte(s.B[s.I:], ']'); end >= 0 {
		n += bytes.Count(s.B[s.I:s.I+end], []byte{','})
	}
	return n
}

// appendIntElems consumes an integer array's elements from the next one
// through the closing bracket and appends them to out.
func (s *jscan) appendIntElems(out []int32) ([]int32, bool) {
	b, i := s.B, s.I
	for {
		// The common case: "digits," with fewer than eight digits and no
		// leading zero, read as one word. The next position depends only on
		// where the comma is, which keeps the loop's critical path short;
		// the digit check runs beside it.
		if len(b)-i >= 8 {
			w := binary.LittleEndian.Uint64(b[i:])
			if d := commaAt(w); d > 0 && d < 8 && digitRun(w) == d && (d == 1 || b[i] != '0') {
				// Seven digits or fewer always fit an int32.
				out = append(out, int32(digitsValue(w, d)))
				i += d + 1
				continue
			}
		}
		// Anything else — a sign, whitespace, a long number, the end of the
		// body or an error — goes through int.
		s.I = i
		v, ok := s.int32()
		if !ok {
			return nil, false
		}
		s.WS()
		i = s.I
		if i >= len(b) || b[i] != ',' && b[i] != ']' {
			return nil, false
		}
		out = append(out, v)
		i++
		if b[i-1] == ']' {
			s.I = i
			return out, true
		}
		for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
			i++
		}
	}
}
