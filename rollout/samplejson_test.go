package rollout

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// stdSampleJSON is the reference: what writeJSONL (encoding/json, HTML
// escaping off) writes for s, without the newline.
func stdSampleJSON(tb testing.TB, s *Sample) ([]byte, error) {
	tb.Helper()
	var buf bytes.Buffer
	if err := writeJSONL(&buf, []Sample{*s}); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// checkSampleJSON fails when appendSampleJSON and encoding/json disagree on
// s: different bytes, or one of them rejecting it and the other not.
func checkSampleJSON(tb testing.TB, s *Sample) {
	tb.Helper()
	want, werr := stdSampleJSON(tb, s)
	got, ok := appendSampleJSON(nil, s)
	switch {
	case werr != nil && ok:
		tb.Fatalf("encoding/json rejects %+v (%v), appendSampleJSON wrote %s", s, werr, got)
	case werr == nil && !ok:
		tb.Fatalf("appendSampleJSON rejects %+v, encoding/json wrote %s", s, want)
	case werr == nil && !bytes.Equal(got, want):
		tb.Fatalf("appendSampleJSON(%+v)\n got %s\nwant %s", s, got, want)
	}
}

// edgeFloats are values around encoding/json's switches between 'f' and
// 'e' notation, signed zeros, extremes and values whose shortest form is
// long or short.
var edgeFloats = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.1, -0.1, 0.5, 1.5, 100, 1e20, -1e20,
	1e-6, -1e-6, math.Nextafter(1e-6, 0), math.Nextafter(1e-6, 1), 9.999999e-7,
	1e-7, -1e-7, 1e-9, 1e-10, 1.5e-10, 1e-100, 1e-300, 1e21, -1e21,
	math.Nextafter(1e21, 0), math.Nextafter(1e21, math.Inf(1)), 1e22, 1e100, 1e300,
	math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
	2.2250738585072014e-308, 4.9406564584124654e-324, 0.30000000000000004, 1.0 / 3, -2.0 / 3,
	123456789012345678, 1 << 53, 1<<53 + 1, 12345.678, -0.000123, -1.1920928955078125e-07,
	math.Pi, -math.E, math.NaN(), math.Inf(1), math.Inf(-1),
}

// edgeStrings exercise every escaping rule of encoding/json.
var edgeStrings = []string{
	"", "run-1", "planner", "q-001", "stop", "padding", `quo"te`, `back\slash`, "<a> & b",
	"tab\tnew\nline\rcr", "\b\f\x00\x01\x1f\x7f", "héllo wörld", "日本語", "emoji 😀",
	"\u2028\u2029", "bad \xff utf8", "\xc3", "\xed\xa0\x80", "mixed \"é\"\n\u2028<>&",
}

// edgeInts are around every change of digit count and the bounds of the
// short paths.
var edgeInts = []int{
	math.MinInt, math.MaxInt, math.MinInt + 1, -1, -10, -99999999, -100000000, 0, 1, 9, 10, 11, 99, 100, 101,
	999, 1000, 9999, 10000, 99999, 100000, 999999, 1000000, 9999999, 10000000,
	99999999, 100000000, 100000001, 999999999, 1 << 32, 1<<32 - 1,
}

func randomFloat(rng *rand.Rand) float64 {
	switch rng.IntN(6) {
	case 0:
		return edgeFloats[rng.IntN(len(edgeFloats))]
	case 1:
		return math.Float64frombits(rng.Uint64())
	case 2:
		return -rng.ExpFloat64() * math.Pow(10, float64(rng.IntN(40)-30))
	case 3:
		// Logprobs as a sampler reports them: a few decimals.
		return -math.Round(rng.Float64()*20*1e4) / 1e4
	case 4:
		return rng.NormFloat64()
	default:
		return 0
	}
}

// randomMask returns n mask values: 0 or 1 when binary, any int8 otherwise
// (the writer must copy what it is given).
func randomMask(rng *rand.Rand, n int, binary bool) []int8 {
	if n == 0 && rng.IntN(2) == 0 {
		return nil
	}
	out := make([]int8, n)
	for i := range out {
		if binary {
			out[i] = int8(rng.IntN(2))
		} else {
			out[i] = int8(rng.IntN(256) - 128)
		}
	}
	return out
}

func randomInts(rng *rand.Rand, n int, mask bool) []int {
	if n == 0 && rng.IntN(2) == 0 {
		return nil
	}
	out := make([]int, n)
	for i := range out {
		switch {
		case mask:
			out[i] = rng.IntN(2)
		case rng.IntN(20) == 0:
			out[i] = edgeInts[rng.IntN(len(edgeInts))]
		default:
			out[i] = rng.IntN(200000)
		}
	}
	return out
}

func randomSample(rng *rand.Rand, finiteOnly bool) Sample {
	str := func() string {
		if rng.IntN(3) == 0 {
			return edgeStrings[rng.IntN(len(edgeStrings))]
		}
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return string(b)
	}
	flt := func() float64 {
		for {
			f := randomFloat(rng)
			if !finiteOnly || !(math.IsNaN(f) || math.IsInf(f, 0)) {
				return f
			}
		}
	}
	n := rng.IntN(40)
	s := Sample{
		Run: str(), Step: rng.IntN(1000) - 1, Role: Role(str()), QueryID: str(), Rollout: rng.IntN(16),
		PolicyVersion: rng.Int64() - math.MaxInt64/2,
		InputIDs:      randomInts(rng, n, false), LossMask: randomMask(rng, n, rng.IntN(4) != 0),
		Reward: flt(), Advantage: flt(), NumTurns: rng.IntN(50), FinishReason: str(), FormatOK: rng.IntN(2) == 0,
	}
	if n > 0 || rng.IntN(2) == 0 {
		s.Logprobs = make([]float64, n)
		for i := range s.Logprobs {
			s.Logprobs[i] = flt()
		}
	}
	if rng.IntN(2) == 0 {
		v := rng.IntN(10) - 2
		s.SubIndex = &v
	}
	if rng.IntN(2) == 0 {
		s.DuplicateOf = &SubRef{Rollout: rng.IntN(8), SubIndex: rng.IntN(8) - 1}
	}
	return s
}

func TestAppendSampleJSONMatchesEncodingJSON(t *testing.T) {
	t.Run("edge floats", func(t *testing.T) {
		for _, f := range edgeFloats {
			s := Sample{Run: "r", Logprobs: []float64{f, 0, f}, Reward: f, Advantage: -f, InputIDs: []int{1, 2, 3}, LossMask: []int8{1, 0, 1}}
			checkSampleJSON(t, &s)
		}
	})
	t.Run("edge strings", func(t *testing.T) {
		for _, str := range edgeStrings {
			s := Sample{Run: str, Role: Role(str), QueryID: str, FinishReason: str}
			checkSampleJSON(t, &s)
		}
	})
	t.Run("nil and empty", func(t *testing.T) {
		checkSampleJSON(t, &Sample{})
		checkSampleJSON(t, &Sample{InputIDs: []int{}, LossMask: []int8{}, Logprobs: []float64{}})
	})
	t.Run("random", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		for range 20000 {
			s := randomSample(rng, false)
			checkSampleJSON(t, &s)
		}
	})
	t.Run("random floats", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		for range 200000 {
			f := math.Float64frombits(rng.Uint64())
			if rng.IntN(2) == 0 {
				// Dense around the notation switches and small logprobs.
				f = math.Ldexp(rng.Float64(), rng.IntN(160)-90)
			}
			switch rng.IntN(4) {
			case 0:
				// A decimal of up to 9 fractional digits, as samplers report.
				f = float64(rng.Int64N(1e12)-5e11) / math.Pow(10, float64(rng.IntN(10)))
			case 1:
				// Near the decimal fast path's bounds.
				f = []float64{1e-6, 1e9, 999999999.999999, 999999999.9999995, 1e9 - 1e-6}[rng.IntN(5)]
				f = math.Nextafter(f, f*float64(rng.IntN(3)-1)*2)
			}
			want, werr := json.Marshal(f)
			got, ok := appendJSONFloat(nil, f)
			if (werr == nil) != ok || (ok && !bytes.Equal(got, want)) {
				t.Fatalf("appendJSONFloat(%v) = %s, %v; encoding/json %s, %v", f, got, ok, want, werr)
			}
		}
	})
}

func TestWriteSamplesJSONLMatchesWriteJSONL(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	rows := []Sample{}
	for range 500 {
		rows = append(rows, randomSample(rng, true))
	}
	var got, want bytes.Buffer
	if err := writeSamplesJSONL(&got, rows); err != nil {
		t.Fatal(err)
	}
	if err := writeJSONL(&want, rows); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatal("writeSamplesJSONL and writeJSONL differ")
	}

	// A non-finite value is the same error as encoding/json's, on its line.
	rows[3].Logprobs = []float64{math.NaN()}
	werr := writeJSONL(&want, rows)
	gerr := writeSamplesJSONL(&got, rows)
	if werr == nil || gerr == nil || gerr.Error() != werr.Error() || !strings.HasPrefix(gerr.Error(), "line 4: ") {
		t.Fatalf("NaN logprob: writeSamplesJSONL error %v, writeJSONL error %v", gerr, werr)
	}
}

func FuzzAppendSampleJSON(f *testing.F) {
	f.Add("run", "q1", "stop", int64(3), uint64(0), uint64(math.Float64bits(-0.25)), 5, 1, true)
	f.Add("<a> & \"b\"\n", "\u2028\xff", "", int64(-1), math.Float64bits(1e-7), math.Float64bits(1e21), -7, 0, false)
	f.Add("é", "\x00", "padding", int64(math.MaxInt64), math.Float64bits(math.Copysign(0, -1)), math.Float64bits(math.NaN()), 123456, -3, true)
	f.Fuzz(func(t *testing.T, run, query, finish string, version int64, a, b uint64, id, sub int, ok bool) {
		fa, fb := math.Float64frombits(a), math.Float64frombits(b)
		s := Sample{
			Run: run, Step: id, Role: Role(finish), QueryID: query, Rollout: sub, PolicyVersion: version,
			InputIDs: []int{id, sub, id ^ sub}, LossMask: []int8{int8(sub), 1, 0}, Logprobs: []float64{fa, fb, 0},
			Reward: fb, Advantage: fa, NumTurns: sub, FinishReason: finish, FormatOK: ok,
		}
		if ok {
			s.SubIndex = &sub
			s.DuplicateOf = &SubRef{Rollout: id, SubIndex: sub}
		}
		checkSampleJSON(t, &s)
	})
}

func BenchmarkWriteSamplesJSONL(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	rows := make([]Sample, 64)
	for i := range rows {
		n := 4000
		s := Sample{Run: "bench", Step: 1, Role: RoleExecutor, QueryID: "q-0001", Rollout: i % 8, PolicyVersion: 1,
			InputIDs: make([]int, n), LossMask: make([]int8, n), Logprobs: make([]float64, n),
			Reward: 0.55, Advantage: -0.7071067811865476, NumTurns: 5, FinishReason: "stop", FormatOK: true}
		for j := range n {
			s.InputIDs[j] = rng.IntN(150000)
			if rng.IntN(4) == 0 {
				s.LossMask[j] = 1
				s.Logprobs[j] = -math.Round(rng.ExpFloat64()*1e4) / 1e4
			}
		}
		rows[i] = s
	}
	for _, bc := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"encoding-json", func(w *bytes.Buffer) error { return writeJSONL(w, rows) }},
		{"hand-written", func(w *bytes.Buffer) error { return writeSamplesJSONL(w, rows) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := bc.write(&buf); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(buf.Len()))
		})
	}
}

// TestWriteSamplesJSONLSharedTokens checks the encoding of samples that
// share token slices (alignment duplicates): byte-identical to
// encoding/json whatever the number and order of holders, and a non-finite
// logprob in a shared set fails on its first holder's line.
func TestWriteSamplesJSONLSharedTokens(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var base []Sample
	for range 6 {
		base = append(base, randomSample(rng, true))
	}
	var rows []Sample
	// Holders: 1, 2, 3 and 4 copies, interleaved, with other fields changed.
	for round := range 4 {
		for i := range base {
			if round <= i%4 {
				s := base[i]
				s.Rollout, s.Advantage = round, float64(round)/3
				rows = append(rows, s)
			}
		}
	}
	if st := newSharedTokens(rows); st == nil || len(st.counts) < 4 {
		t.Fatal("test data holds too few shared token slices")
	}
	var got, want bytes.Buffer
	if err := writeSamplesJSONL(&got, rows); err != nil {
		t.Fatal(err)
	}
	if err := writeJSONL(&want, rows); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatal("writeSamplesJSONL and writeJSONL differ on shared token slices")
	}

	bad := base[1]
	bad.Logprobs = slices.Clone(bad.Logprobs)
	bad.Logprobs[len(bad.Logprobs)-1] = math.Inf(-1)
	rows = []Sample{base[0], bad, bad}
	werr := writeJSONL(&want, rows)
	gerr := writeSamplesJSONL(&got, rows)
	if werr == nil || gerr == nil || gerr.Error() != werr.Error() || !strings.HasPrefix(gerr.Error(), "line 2: ") {
		t.Fatalf("shared -Inf: writeSamplesJSONL error %v, writeJSONL error %v", gerr, werr)
	}
}

func TestAppendSmallUint(t *testing.T) {
	check := func(u uint32) {
		if got, want := string(appendSmallUint([]byte("x"), u)), "x"+strconv.FormatUint(uint64(u), 10); got != want {
			t.Fatalf("appendSmallUint(%d) = %q, want %q", u, got, want)
		}
	}
	for p := uint32(1); p <= 1e8; p *= 10 {
		for _, u := range []uint32{p - 1, p, p + 1} {
			if u < 1e8 {
				check(u)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		check(rng.Uint32N(1e8))
	}
}
