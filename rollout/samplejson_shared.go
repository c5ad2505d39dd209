package rollout

// sharedTokens remembers the encoded token arrays of samples whose token
// slices other samples of the same file share. Alignment duplicates an
// executor trajectory by sharing its slices (see Sink), and the token
// arrays are nearly all of a sample's bytes, so each shared set is encoded
// once and copied for the other samples.
type sharedTokens struct {
	// counts is how many samples not yet written hold each set of slices;
	// only sets held more than once are remembered.
	counts  map[tokenSlices]int
	encoded map[tokenSlices][]byte
}

// tokenSlices identifies a sample's token arrays by their first elements'
// addresses and lengths: samples that share the slices encode identically.
type tokenSlices struct {
	ids        *int
	mask       *int8
	logprobs   *float64
	nIDs, nLog int
	nMask      int
}

func sliceKey(s *Sample) (tokenSlices, bool) {
	if len(s.InputIDs) == 0 || len(s.LossMask) == 0 || len(s.Logprobs) == 0 {
		return tokenSlices{}, false
	}
	return tokenSlices{ids: &s.InputIDs[0], mask: &s.LossMask[0], logprobs: &s.Logprobs[0],
		nIDs: len(s.InputIDs), nMask: len(s.LossMask), nLog: len(s.Logprobs)}, true
}

// newSharedTokens counts the slice sets of rows; it returns nil when no two
// samples share one.
func newSharedTokens(rows []Sample) *sharedTokens {
	counts := make(map[tokenSlices]int, len(rows))
	shared := false
	for i := range rows {
		if k, ok := sliceKey(&rows[i]); ok {
			counts[k]++
			shared = shared || counts[k] > 1
		}
	}
	if !shared {
		return nil
	}
	return &sharedTokens{counts: counts, encoded: map[tokenSlices][]byte{}}
}

// appendTokens appends s's token arrays (see appendTokenArrays), from the
// remembered encoding when another sample holding the same slices was
// already encoded. The last holder releases the encoding.
func (t *sharedTokens) appendTokens(dst []byte, s *Sample) ([]byte, bool) {
	if t == nil {
		return appendTokenArrays(dst, s)
	}
	k, ok := sliceKey(s)
	if !ok {
		return appendTokenArrays(dst, s)
	}
	enc, remembered := t.encoded[k]
	switch {
	case remembered:
		dst = append(dst, enc...)
	case t.counts[k] < 2:
		return appendTokenArrays(dst, s)
	default:
		start := len(dst)
		if dst, ok = appendTokenArrays(dst, s); !ok {
			return dst, false
		}
		t.encoded[k] = append([]byte(nil), dst[start:]...)
	}
	// counts[k] is the number of holders not yet written.
	if t.counts[k]--; t.counts[k] == 0 {
		delete(t.encoded, k)
	}
	return dst, true
}
