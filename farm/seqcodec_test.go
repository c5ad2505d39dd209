package farm

import (
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/rollout/rollouttest"
)

// sequencesFrom builds sequence lists from fuzz bytes: token ids of any
// 32-bit value (negative ones too), masks of any value, a logprob of any
// bit pattern for each token of mask ≠ 0 (the compact form the codec
// takes), nil and empty slices.
func sequencesFrom(data []byte) []rollout.Sequence {
	if len(data) == 0 {
		return nil
	}
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	seqs := []rollout.Sequence{}
	for len(data) > 0 && len(seqs) < 8 {
		n := int(next() % 40)
		var s rollout.Sequence
		if next()%5 != 0 {
			s.InputIDs = make([]int32, n)
		}
		if next()%5 != 0 {
			s.LossMask = make([]int8, n)
		}
		wide := next()%4 == 0
		for i := range s.InputIDs {
			s.InputIDs[i] = int32(next()) | int32(next())<<8
			if wide {
				s.InputIDs[i] = int32(binary.LittleEndian.Uint32([]byte{next(), next(), next(), next()}))
			}
		}
		sampled := 0
		for i := range s.LossMask {
			s.LossMask[i] = int8(next() % 3)
			if s.LossMask[i] != 0 {
				sampled++
			}
		}
		if next()%5 != 0 {
			s.Logprobs = make([]float64, sampled)
		}
		for i := range s.Logprobs {
			switch next() % 4 {
			case 0:
			case 1:
				s.Logprobs[i] = -float64(next()) / 7
			case 2:
				s.Logprobs[i] = math.Copysign(0, -1)
			default:
				s.Logprobs[i] = math.Float64frombits(uint64(next())<<56 | uint64(next()))
			}
		}
		seqs = append(seqs, s)
	}
	return seqs
}

// sameSequences compares bit for bit, nil and empty apart.
func sameSequences(a, b []rollout.Sequence) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if (x.InputIDs == nil) != (y.InputIDs == nil) || (x.LossMask == nil) != (y.LossMask == nil) || (x.Logprobs == nil) != (y.Logprobs == nil) {
			return false
		}
		if !reflect.DeepEqual(x.InputIDs, y.InputIDs) && len(x.InputIDs)+len(y.InputIDs) > 0 ||
			!reflect.DeepEqual(x.LossMask, y.LossMask) && len(x.LossMask)+len(y.LossMask) > 0 || len(x.Logprobs) != len(y.Logprobs) {
			return false
		}
		for j := range x.Logprobs {
			if math.Float64bits(x.Logprobs[j]) != math.Float64bits(y.Logprobs[j]) {
				return false
			}
		}
	}
	return true
}

func FuzzSequenceCodec(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 1, 1, 1, 0, 7, 0, 1, 2, 1, 200, 3})
	f.Add([]byte("a longer seed with many bytes to spread over several sequences and tokens"))
	f.Fuzz(func(t *testing.T, data []byte) {
		seqs := sequencesFrom(data)
		enc := appendSequences([]byte{0xAA}, seqs)[1:]
		got, rest, err := decodeSequences(append(enc, 0xBB))
		if err != nil || len(rest) != 1 || rest[0] != 0xBB {
			t.Fatalf("decode: %v (rest %v)", err, rest)
		}
		if !sameSequences(seqs, got) {
			t.Fatalf("round trip changed the sequences:\n%#v\n%#v", seqs, got)
		}
		// Arbitrary bytes, and every truncation, decode or fail; never panic.
		decodeSequences(data)
		for i := range enc {
			if _, _, err := decodeSequences(enc[:i]); err == nil && i < len(enc) {
				// A prefix may decode only if it is a whole list itself.
				continue
			}
		}
	})
}

// TestStoredResultHasEveryField fails when RolloutResult or
// TrajectoryResult gains a field the stored form does not carry, which a
// result read back from the store would silently lose.
func TestStoredResultHasEveryField(t *testing.T) {
	check := func(full, stored reflect.Type, except map[string]bool) {
		for i := range full.NumField() {
			f := full.Field(i)
			if !f.IsExported() || except[f.Name] {
				continue
			}
			if _, ok := stored.FieldByName(f.Name); !ok {
				t.Errorf("%s.%s is not stored: add it to %s", full.Name(), f.Name, stored.Name())
			}
		}
	}
	check(reflect.TypeFor[RolloutResult](), reflect.TypeFor[storedResult](), nil)
	check(reflect.TypeFor[TrajectoryResult](), reflect.TypeFor[storedTrajectory](), map[string]bool{"Sequences": true})
}

// TestSequenceCodecCarriesEveryTokenArray round-trips a sample whose every
// field is filled through the store's encoding of token sequences: every
// Sample field that is a slice (a per-token array) must be a field of
// rollout.Sequence and come back from appendSequences and decodeSequences.
// The sample's other fields are not stored as such: a step is assembled
// from the stored result's tree, scores and trajectories, which
// TestStoredResultHasEveryField checks.
func TestSequenceCodecCarriesEveryTokenArray(t *testing.T) {
	want := rollouttest.FilledSample(t)
	wv := reflect.ValueOf(want)
	var wide rollout.Tokens
	tv := reflect.ValueOf(&wide).Elem()
	var tokens []string
	for i := range wv.NumField() {
		f := wv.Type().Field(i)
		if f.Type.Kind() != reflect.Slice || f.Name == "TurnFinishReasons" {
			// TurnFinishReasons is per turn, not per token: the stored
			// result's CBOR carries it (storedPiece, TestTrajectorySplits).
			continue
		}
		tokens = append(tokens, f.Name)
		tf, ok := tv.Type().FieldByName(f.Name)
		if !ok || tf.Type != f.Type {
			t.Errorf("the store's sequence codec drops Sample.%s: rollout.Tokens has no field %s %s", f.Name, f.Name, f.Type)
			continue
		}
		if _, ok := reflect.TypeFor[rollout.Sequence]().FieldByName(f.Name); !ok {
			t.Errorf("the store's sequence codec drops Sample.%s: rollout.Sequence has no field %s", f.Name, f.Name)
		}
		tv.FieldByIndex(tf.Index).Set(wv.Field(i))
	}
	seq, err := wide.Compact()
	if err != nil {
		t.Fatal(err)
	}
	decoded, rest, err := decodeSequences(appendSequences(nil, []rollout.Sequence{seq}))
	if err != nil || len(rest) != 0 || len(decoded) != 1 {
		t.Fatalf("decode: %d sequences, %d bytes left, %v", len(decoded), len(rest), err)
	}
	back := decoded[0].Wide(true)
	got := want
	gv := reflect.ValueOf(&got).Elem()
	bv := reflect.ValueOf(back)
	for _, name := range tokens {
		if bf := bv.FieldByName(name); bf.IsValid() {
			gv.FieldByName(name).Set(bf)
		} else {
			gv.FieldByName(name).SetZero()
		}
	}
	rollouttest.CheckRoundTrip(t, "the store's sequence codec", want, got, tokens...)
	// Beside the token arrays a sequence holds its turn record (FirstTurn,
	// TurnFinishReasons, Split), stored apart.
	if n := reflect.TypeFor[rollout.Sequence]().NumField(); n > len(tokens)+3 {
		t.Errorf("rollout.Sequence has %d fields, Sample only the token arrays %v: this test no longer covers the codec", n, tokens)
	}
}

// TestSequenceCodecLayout pins the stored bytes of a sequence to the layout
// stores were written in when sequences held a logprob for every token, so
// that a run stored before resumes the same, and checks that what the
// compact form cannot hold is an error, not a silent change.
func TestSequenceCodecLayout(t *testing.T) {
	seq := rollout.Sequence{InputIDs: []int32{5, 7}, LossMask: []int8{0, 1}, Logprobs: []float64{-0.5}}
	want := []byte{
		1, 2, // format, one sequence
		3, 0, 5, 0, 0, 0, 7, 0, 0, 0, // two ids, 4 bytes each
		3, 0, 1, // the mask
		3, 0, 0, 0, 0, 0, 0, 0xE0, 0xBF, // the logprob count (the token count), the sampled token's -0.5
		0, // no prompt-token logprobs
	}
	got := appendSequences(nil, []rollout.Sequence{seq})
	if !slices.Equal(got, want) {
		t.Fatalf("encoded\n%v\nwant\n%v", got, want)
	}
	decoded, rest, err := decodeSequences(want)
	if err != nil || len(rest) != 0 || !sameSequences(decoded, []rollout.Sequence{seq}) {
		t.Fatalf("decoded %+v, %d bytes left, %v", decoded, len(rest), err)
	}
	bad := map[string][]byte{
		// A prompt token's logprob of -0.25 (index 0), which the old layout
		// could hold.
		"a logprob where the mask is 0": append(slices.Clone(want[:len(want)-1]), 1, 0, 0, 0, 0, 0, 0, 0, 0xD0, 0xBF),
		// An id of 2^31 in the 4-byte form.
		"token id beyond 32 bits": slices.Concat(want[:4], []byte{0, 0, 0, 0x80}, want[8:]),
		// A logprob count other than the token count.
		"logprob count differs": slices.Concat(want[:15], []byte{2}, want[16:]),
	}
	for name, blob := range bad {
		if _, _, err := decodeSequences(blob); err == nil || !errors.Is(err, errSeqBlob) {
			t.Errorf("%s: decoded without the error, got %v", name, err)
		}
	}
}
