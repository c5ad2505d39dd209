package trainerbridge

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"

	"github.com/mgrpo/mgrpo/rollout"
)

// DistinctSequences finds the distinct token sequences of samples (input
// ids, loss mask and logprobs, the logprobs compared bit for bit), so that
// a backend can send or store each once: seq[i] is the number of sample
// i's sequence, and first[s] the index of the first sample holding
// sequence s (sequences are numbered in order of first appearance).
// Alignment's duplicates share their original's slices and are found
// without reading their tokens; equal sequences held in distinct slices
// are found by content.
func DistinctSequences(samples []rollout.Sample) (seq, first []int) {
	seq = make([]int, len(samples))
	byPointer := make(map[tokenSlices]int, len(samples))
	byContent := make(map[uint64][]int, len(samples))
	hashSeed := maphash.MakeSeed()
	var buf []byte
	for i := range samples {
		s := &samples[i]
		key, keyed := sliceKey(s)
		if keyed {
			if n, ok := byPointer[key]; ok {
				seq[i] = n
				continue
			}
		}
		buf = appendTokenBytes(buf[:0], s)
		h := maphash.Bytes(hashSeed, buf)
		found := -1
		for _, n := range byContent[h] {
			if sameTokens(&samples[first[n]], s) {
				found = n
				break
			}
		}
		if found < 0 {
			found = len(first)
			first = append(first, i)
			byContent[h] = append(byContent[h], found)
		}
		if keyed {
			byPointer[key] = found
		}
		seq[i] = found
	}
	return seq, first
}

// tokenSlices identifies a sample's token slices by address and length.
type tokenSlices struct {
	ids              *int
	mask             *int8
	logprobs         *float64
	nIDs, nMask, nLP int
}

func sliceKey(s *rollout.Sample) (tokenSlices, bool) {
	if len(s.InputIDs) == 0 || len(s.LossMask) == 0 || len(s.Logprobs) == 0 {
		return tokenSlices{}, false
	}
	return tokenSlices{&s.InputIDs[0], &s.LossMask[0], &s.Logprobs[0], len(s.InputIDs), len(s.LossMask), len(s.Logprobs)}, true
}

// appendTokenBytes appends the bytes hashed for s's sequence.
func appendTokenBytes(dst []byte, s *rollout.Sample) []byte {
	dst = slices.Grow(dst, 24+8*len(s.InputIDs)+len(s.LossMask)+8*len(s.Logprobs))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(s.InputIDs)))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(s.LossMask)))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(s.Logprobs)))
	for _, id := range s.InputIDs {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(id))
	}
	for _, m := range s.LossMask {
		dst = append(dst, byte(m))
	}
	for _, f := range s.Logprobs {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
	}
	return dst
}

// sameTokens reports whether a and b hold the same token arrays, logprobs
// compared bit for bit.
func sameTokens(a, b *rollout.Sample) bool {
	if !slices.Equal(a.InputIDs, b.InputIDs) || !slices.Equal(a.LossMask, b.LossMask) || len(a.Logprobs) != len(b.Logprobs) {
		return false
	}
	for i, f := range a.Logprobs {
		if math.Float64bits(f) != math.Float64bits(b.Logprobs[i]) {
			return false
		}
	}
	return true
}
