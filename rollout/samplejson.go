package rollout

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/mgrpo/mgrpo/internal/jsonfast"
)

// writeSamplesJSONL writes one Sample per line, byte for byte as
// writeJSONL (encoding/json without HTML escaping) would. A sample holds
// thousands of token ids and logprobs, and encoding/json's reflection and
// per-value dispatch dominated the farm's CPU time when writing a step; the
// hand-written encoder appends the same bytes directly. A sample that
// encoding/json would reject (a non-finite float) is handed to encoding/json
// so that the error is the same.
func writeSamplesJSONL(w io.Writer, rows []Sample) error {
	var buf []byte
	tokens := newSharedTokens(rows)
	for i := range rows {
		var ok bool
		buf, ok = appendSampleJSONShared(buf[:0], &rows[i], tokens)
		if !ok {
			if _, err := json.Marshal(&rows[i]); err != nil {
				return fmt.Errorf("line %d: %w", i+1, err)
			}
			return fmt.Errorf("line %d: sample encoder rejected a value encoding/json accepts", i+1)
		}
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// appendSampleJSON appends the JSON object of s, without a newline, exactly
// as an encoding/json Encoder with SetEscapeHTML(false) writes it: keys in
// struct order, nil slices and pointers as null, floats as encoding/json
// formats float64. It returns false, with dst in an unspecified state, when
// s holds a NaN or an infinity, which encoding/json rejects.
func appendSampleJSON(dst []byte, s *Sample) ([]byte, bool) {
	return appendSampleJSONShared(dst, s, nil)
}

// appendSampleJSONShared is appendSampleJSON taking the token arrays' JSON
// from shared when s's token slices are shared with another sample. It
// writes the members of sampleFields in order.
func appendSampleJSONShared(dst []byte, s *Sample, shared *sharedTokens) ([]byte, bool) {
	ok := true
	dst = append(dst, '{')
	for i := range sampleFields {
		f := &sampleFields[i]
		if f.appendValue == nil {
			// The token arrays, all three at the first one's row.
			if i == firstTokenField {
				if dst, ok = shared.appendTokens(dst, s); !ok {
					return dst, false
				}
			}
			continue
		}
		dst = appendJSONKey(dst, f.key, i == 0)
		if dst, ok = f.appendValue(dst, s); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// firstTokenField is the index in sampleFields of the first token array.
var firstTokenField = func() int {
	for i, f := range sampleFields {
		if f.part == partTokens {
			return i
		}
	}
	panic("rollout: sampleFields has no token arrays")
}()

// appendJSONKey appends `"key":`, after a comma unless first.
func appendJSONKey(dst []byte, key string, first bool) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

// appendTokenArrays appends the input_ids, loss_mask and logprobs members,
// with their leading comma. It returns false for a non-finite logprob.
func appendTokenArrays(dst []byte, s *Sample) ([]byte, bool) {
	var ok bool
	dst = append(dst, `,"input_ids":`...)
	dst = appendJSONInts(dst, s.InputIDs)
	dst = append(dst, `,"loss_mask":`...)
	dst = appendJSONInts(dst, s.LossMask)
	dst = append(dst, `,"logprobs":`...)
	if s.Logprobs == nil {
		return append(dst, "null"...), true
	}
	// Room for the masked tokens' "0," without growing; sampled tokens'
	// logprobs grow it as needed.
	dst = slices.Grow(dst, 2+2*len(s.Logprobs))
	dst = append(dst, '[')
	for i, f := range s.Logprobs {
		if i > 0 {
			dst = append(dst, ',')
		}
		if math.Float64bits(f) == 0 { // +0: a masked token
			dst = append(dst, '0')
			continue
		}
		if dst, ok = appendJSONFloat(dst, f); !ok {
			return dst, false
		}
	}
	return append(dst, ']'), true
}

// appendJSONInts appends an integer slice (token ids, a loss mask) as
// encoding/json does: null when nil. The digits are written straight into
// room reserved once for the whole array: this loop writes most of a step
// file's bytes.
func appendJSONInts[T int | int8](dst []byte, v []T) []byte {
	if v == nil {
		return append(dst, "null"...)
	}
	// Room for every value at its longest ("-9223372036854775808," for an
	// int), and at least the eight bytes putSmallUint stores at once.
	width := 21
	if _, small := any(v[:0]).([]int8); small {
		width = 8
	}
	l := len(dst)
	dst = slices.Grow(dst, 2+width*len(v))
	b := dst[l : l+2+width*len(v)]
	b[0] = '['
	pos := 1
	for i, n := range v {
		if i > 0 {
			b[pos] = ','
			pos++
		}
		switch {
		case uint(n) < 10:
			b[pos] = byte('0' + n)
			pos++
		case uint(n) < 1e8:
			pos += putSmallUint(b[pos:], uint32(n))
		default:
			pos += len(strconv.AppendInt(b[pos:pos], int64(n), 10))
		}
	}
	b[pos] = ']'
	return dst[:l+pos+1]
}

// appendJSONFloat appends f as encoding/json encodes a float64: the
// shortest representation that reads back as f, in 'f' notation unless
// |f| < 1e-6 or |f| ≥ 1e21 (then 'e', with a one-digit negative exponent
// not padded: 1e-7, not 1e-07), and -0 as "-0". It returns false for NaN
// and infinities.
func appendJSONFloat(dst []byte, f float64) ([]byte, bool) {
	if f == 0 && !math.Signbit(f) {
		// Masked tokens' logprobs: most values of a sample.
		return append(dst, '0'), true
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	abs := math.Abs(f)
	if abs >= 1e-6 && abs < 1e9 {
		// Samplers report logprobs with a few decimals. When f is exactly
		// the double nearest to m·10⁻⁶ for an integer m < 10¹⁵ (m/1e6 is
		// a correctly rounded division of exact values, so it is the
		// double that decimal parses to), that decimal is f's shortest
		// representation: any other decimal of at most 15 significant
		// digits differs from it by at least 10⁻¹⁵ relative, more than the
		// width of f's rounding interval (2⁻⁵² relative). It is printed
		// without the float formatting machinery.
		if m := math.Round(abs * 1e6); m/1e6 == abs {
			if f < 0 {
				dst = append(dst, '-')
			}
			u := uint64(m)
			dst = appendJSONUint(dst, u/1e6)
			if frac := u % 1e6; frac != 0 {
				var tmp [7]byte
				tmp[0] = '.'
				for i := 6; i > 0; i-- {
					tmp[i] = byte('0' + frac%10)
					frac /= 10
				}
				n := len(tmp)
				for tmp[n-1] == '0' {
					n--
				}
				dst = append(dst, tmp[:n]...)
			}
			return dst, true
		}
	}
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// appendJSONString appends s as a JSON string as the step files' encoder
// (encoding/json with HTML escaping off) writes it.
func appendJSONString(dst []byte, s string) []byte { return jsonfast.AppendString(dst, s, false) }

// appendJSONUint appends u in decimal, as strconv.AppendUint does.
func appendJSONUint(dst []byte, u uint64) []byte {
	if u < 1e8 {
		return appendSmallUint(dst, uint32(u))
	}
	return strconv.AppendUint(dst, u, 10)
}

// appendSmallUint appends u < 10⁸ in decimal.
func appendSmallUint(dst []byte, u uint32) []byte {
	l := len(dst)
	dst = slices.Grow(dst, 8)
	n := putSmallUint(dst[l:l+8], u)
	return dst[:l+n]
}

// putSmallUint writes u < 10⁸ in decimal at the start of b, which has room
// for 8 bytes, and returns the number of digits: token ids are below 10⁸,
// and strconv's general path cost more than the rest of the encoding. The
// digits come four at a time from a table.
func putSmallUint(b []byte, u uint32) int {
	b = b[:8]
	if u < 10000 {
		d := &digitQuads[u]
		n := quadLen(u)
		copy(b, d[4-n:])
		return n
	}
	hi, lo := u/10000, u%10000
	n := quadLen(hi)
	copy(b, digitQuads[hi][4-n:])
	copy(b[n:], digitQuads[lo][:])
	return n + 4
}

// quadLen returns the number of digits of u < 10⁴ (1 for 0).
func quadLen(u uint32) int {
	switch {
	case u < 10:
		return 1
	case u < 100:
		return 2
	case u < 1000:
		return 3
	}
	return 4
}

// digitQuads[u] is u < 10⁴ in four digits, zero-padded.
var digitQuads = func() (t [10000][4]byte) {
	for u := range t {
		t[u] = [4]byte{byte('0' + u/1000), byte('0' + u/100%10), byte('0' + u/10%10), byte('0' + u%10)}
	}
	return t
}()
