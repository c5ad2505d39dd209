package rollout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
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
	for i := range rows {
		var ok bool
		buf, ok = appendSampleJSON(buf[:0], &rows[i])
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
	var ok bool
	dst = append(dst, `{"run":`...)
	dst = appendJSONString(dst, s.Run)
	dst = append(dst, `,"step":`...)
	dst = strconv.AppendInt(dst, int64(s.Step), 10)
	dst = append(dst, `,"role":`...)
	dst = appendJSONString(dst, string(s.Role))
	dst = append(dst, `,"query_id":`...)
	dst = appendJSONString(dst, s.QueryID)
	dst = append(dst, `,"rollout":`...)
	dst = strconv.AppendInt(dst, int64(s.Rollout), 10)
	dst = append(dst, `,"sub_index":`...)
	if s.SubIndex == nil {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendInt(dst, int64(*s.SubIndex), 10)
	}
	dst = append(dst, `,"duplicate_of":`...)
	if s.DuplicateOf == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, `{"rollout":`...)
		dst = strconv.AppendInt(dst, int64(s.DuplicateOf.Rollout), 10)
		dst = append(dst, `,"sub_index":`...)
		dst = strconv.AppendInt(dst, int64(s.DuplicateOf.SubIndex), 10)
		dst = append(dst, '}')
	}
	dst = append(dst, `,"policy_version":`...)
	dst = strconv.AppendInt(dst, s.PolicyVersion, 10)
	dst = append(dst, `,"input_ids":`...)
	dst = appendJSONInts(dst, s.InputIDs)
	dst = append(dst, `,"loss_mask":`...)
	dst = appendJSONInts(dst, s.LossMask)
	dst = append(dst, `,"logprobs":`...)
	if s.Logprobs == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, f := range s.Logprobs {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendJSONFloat(dst, f); !ok {
				return dst, false
			}
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"reward":`...)
	if dst, ok = appendJSONFloat(dst, s.Reward); !ok {
		return dst, false
	}
	dst = append(dst, `,"advantage":`...)
	if dst, ok = appendJSONFloat(dst, s.Advantage); !ok {
		return dst, false
	}
	dst = append(dst, `,"num_turns":`...)
	dst = strconv.AppendInt(dst, int64(s.NumTurns), 10)
	dst = append(dst, `,"finish_reason":`...)
	dst = appendJSONString(dst, s.FinishReason)
	dst = append(dst, `,"format_ok":`...)
	dst = strconv.AppendBool(dst, s.FormatOK)
	return append(dst, '}'), true
}

// appendJSONInts appends an int slice as encoding/json does: null when nil.
func appendJSONInts(dst []byte, v []int) []byte {
	if v == nil {
		return append(dst, "null"...)
	}
	// Room for every value at its longest ("-9223372036854775808,"), so
	// that the digits can be written in place.
	dst = slices.Grow(dst, 2+21*len(v))
	dst = append(dst, '[')
	for i, n := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		if uint(n) < 1e8 {
			dst = appendSmallUint(dst, uint32(n))
		} else {
			dst = strconv.AppendInt(dst, int64(n), 10)
		}
	}
	return append(dst, ']')
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

// appendJSONString appends s as a JSON string. Plain printable ASCII
// without quotes or backslashes (run names, roles, query ids and finish
// reasons in practice) is copied as is; anything else is escaped by
// encoding/json itself, so that the rules for control characters, invalid
// UTF-8 and U+2028/U+2029 stay exactly its own.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return appendJSONStringSlow(dst, s)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendJSONStringSlow escapes s with encoding/json, HTML escaping off.
func appendJSONStringSlow(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// Encoding a string cannot fail.
	_ = enc.Encode(s)
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
}

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// appendJSONUint appends u in decimal, as strconv.AppendUint does.
func appendJSONUint(dst []byte, u uint64) []byte {
	if u < 1e8 {
		return appendSmallUint(dst, uint32(u))
	}
	return strconv.AppendUint(dst, u, 10)
}

// appendSmallUint appends u < 10⁸ in decimal, writing the digits in place
// two at a time: token ids are below 10⁸ and loss mask values one digit,
// and strconv's general path cost more than the rest of the encoding.
func appendSmallUint(dst []byte, u uint32) []byte {
	if u < 10 {
		return append(dst, byte('0'+u))
	}
	n := 8
	switch {
	case u < 100:
		n = 2
	case u < 1000:
		n = 3
	case u < 10000:
		n = 4
	case u < 100000:
		n = 5
	case u < 1000000:
		n = 6
	case u < 10000000:
		n = 7
	}
	l := len(dst)
	dst = slices.Grow(dst, n)[:l+n]
	b := dst[l:]
	i := n
	for u >= 100 {
		r := u % 100
		u /= 100
		i -= 2
		b[i], b[i+1] = digitPairs[2*r], digitPairs[2*r+1]
	}
	if u >= 10 {
		b[0], b[1] = digitPairs[2*u], digitPairs[2*u+1]
	} else {
		b[0] = byte('0' + u)
	}
	return dst
}
