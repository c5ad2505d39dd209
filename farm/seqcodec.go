package farm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/mgrpo/mgrpo/rollout"
)

// seqFormat is the first byte of an encoded sequence list.
const seqFormat = 1

// appendSequences appends seqs to dst: the format byte, then the count,
// and per sequence its token ids (appendIDs), its mask as one byte a
// token, and its logprobs: the token count (or 0 for nil logprobs), 8
// little-endian bytes for each generated token (mask ≠ 0), then
// uvarint(0). That last count and the token count are the layout's from
// when sequences held a logprob for every token, pairs of an index and 8
// bytes of the prompt tokens whose logprob was not 0 following it; the
// layout is kept so that a store written before reads the same. Every
// length is written as 0 for a nil slice and n+1 otherwise, so nil and
// empty stay apart. The sequences must be valid (rollout.Sequence.Validate:
// one logprob for each 1 of the mask), as the farm's are before they are
// stored.
func appendSequences(dst []byte, seqs []rollout.Sequence) []byte {
	dst = append(dst, seqFormat)
	if seqs == nil {
		return binary.AppendUvarint(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(seqs))+1)
	for _, s := range seqs {
		dst = appendLen(dst, s.InputIDs == nil, len(s.InputIDs))
		if s.InputIDs != nil {
			dst = appendIDs(dst, s.InputIDs)
		}
		dst = appendLen(dst, s.LossMask == nil, len(s.LossMask))
		n := len(dst)
		dst = slices.Grow(dst, len(s.LossMask))[:n+len(s.LossMask)]
		for i, m := range s.LossMask {
			dst[n+i] = byte(m)
		}
		dst = appendLen(dst, s.Logprobs == nil, len(s.LossMask))
		if s.Logprobs != nil {
			j := 0
			for _, m := range s.LossMask {
				if m != 0 {
					var lp float64
					if j < len(s.Logprobs) {
						lp = s.Logprobs[j]
					}
					dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(lp))
					j++
				}
			}
		}
		dst = binary.AppendUvarint(dst, 0)
	}
	return dst
}

// Token id encodings: fixed 4 bytes when every id fits (real vocabularies
// do; a tight loop), else zigzag varints.
const (
	idsUint32 = 0
	idsVarint = 1
)

// appendIDs writes the encoding byte and the ids.
func appendIDs(dst []byte, ids []int32) []byte {
	fits := true
	for _, id := range ids {
		if id < 0 {
			fits = false
			break
		}
	}
	if !fits {
		dst = append(dst, idsVarint)
		for _, id := range ids {
			dst = binary.AppendVarint(dst, int64(id))
		}
		return dst
	}
	dst = append(dst, idsUint32)
	n := len(dst)
	dst = slices.Grow(dst, 4*len(ids))[:n+4*len(ids)]
	out := dst[n:]
	for i, id := range ids {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(id))
	}
	return dst
}

// appendLen writes a slice's length: 0 for nil, n+1 otherwise.
func appendLen(dst []byte, isNil bool, n int) []byte {
	if isNil {
		return binary.AppendUvarint(dst, 0)
	}
	return binary.AppendUvarint(dst, uint64(n)+1)
}

// errSeqBlob is the error of a sequence list that does not decode.
var errSeqBlob = errors.New("stored sequences malformed")

// seqReader reads an encoded sequence list.
type seqReader struct {
	b   []byte
	err error
}

func (r *seqReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", errSeqBlob, what)
	}
}

func (r *seqReader) uvarint(what string) uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(what)
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

// length reads a length written by appendLen; nil reports a nil slice. A
// length the remaining bytes cannot hold (each element takes at least
// minBytes) is an error, so a damaged blob never makes a huge allocation.
func (r *seqReader) length(what string, minBytes int) (n int, isNil bool) {
	v := r.uvarint(what)
	if r.err != nil {
		return 0, true
	}
	if v == 0 {
		return 0, true
	}
	if v-1 > uint64(len(r.b)/max(minBytes, 1)) {
		r.fail(what + " longer than the data")
		return 0, true
	}
	return int(v - 1), false
}

// ids reads n token ids written by appendIDs. An id beyond int32's range
// (a store written when ids were wider) is an error.
func (r *seqReader) ids(n int) []int32 {
	if len(r.b) == 0 {
		r.fail("truncated token ids")
		return nil
	}
	form := r.b[0]
	r.b = r.b[1:]
	out := make([]int32, n)
	switch form {
	case idsUint32:
		if len(r.b) < 4*n {
			r.fail("truncated token ids")
			return nil
		}
		for i := range out {
			v := binary.LittleEndian.Uint32(r.b[4*i:])
			if v > math.MaxInt32 {
				r.fail("token id beyond 32 bits")
				return nil
			}
			out[i] = int32(v)
		}
		r.b = r.b[4*n:]
	case idsVarint:
		for i := range out {
			v, k := binary.Varint(r.b)
			if k <= 0 || v < math.MinInt32 || v > math.MaxInt32 {
				r.fail("token id")
				return nil
			}
			out[i] = int32(v)
			r.b = r.b[k:]
		}
	default:
		r.fail("token id encoding")
		return nil
	}
	return out
}

func (r *seqReader) float() float64 {
	if len(r.b) < 8 {
		r.fail("truncated logprob")
		r.b = nil
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

// decodeSequences decodes one list appendSequences wrote at the start of b
// and returns the bytes after it.
func decodeSequences(b []byte) ([]rollout.Sequence, []byte, error) {
	if len(b) == 0 || b[0] != seqFormat {
		return nil, nil, fmt.Errorf("%w: unknown format", errSeqBlob)
	}
	r := &seqReader{b: b[1:]}
	count, isNil := r.length("sequence count", 3)
	if r.err != nil || isNil {
		return nil, r.b, r.err
	}
	seqs := make([]rollout.Sequence, count)
	for i := range seqs {
		s := &seqs[i]
		n, isNil := r.length("token count", 1)
		if r.err == nil && !isNil {
			s.InputIDs = r.ids(n)
		}
		n, isNil = r.length("mask length", 1)
		if r.err == nil && !isNil {
			s.LossMask = make([]int8, n)
			for j := range s.LossMask {
				s.LossMask[j] = int8(r.b[j])
			}
			r.b = r.b[n:]
		}
		// The logprob count is the token count; only the generated
		// tokens' take bytes. A prompt token's logprob (an exception) has
		// no place in the compact form: such a sequence was never valid.
		lp := r.uvarint("logprob count")
		if r.err == nil && lp > 0 {
			if lp-1 != uint64(len(s.LossMask)) {
				r.fail("logprob count differs from the mask's length")
				return nil, nil, r.err
			}
			sampled := 0
			for _, m := range s.LossMask {
				if m != 0 {
					sampled++
				}
			}
			if sampled > len(r.b)/8 {
				r.fail("truncated logprobs")
				return nil, nil, r.err
			}
			s.Logprobs = make([]float64, sampled)
			for j := range s.Logprobs {
				s.Logprobs[j] = r.float()
			}
		}
		if exceptions := r.uvarint("exception count"); r.err == nil && exceptions != 0 {
			r.fail("a logprob where the mask is 0")
		}
		if r.err != nil {
			return nil, nil, r.err
		}
	}
	return seqs, r.b, nil
}
