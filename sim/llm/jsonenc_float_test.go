package llm

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// checkMicros fails when appendMicros accepts f but writes anything other
// than strconv's shortest 'f' form.
func checkMicros(t *testing.T, f float64) bool {
	t.Helper()
	got, ok := appendMicros([]byte("x"), f)
	if !ok {
		return false
	}
	if want := strconv.AppendFloat([]byte("x"), f, 'f', -1, 64); string(got) != string(want) {
		t.Fatalf("appendMicros(%v) = %s, want %s", f, got, want)
	}
	return true
}

// TestAppendMicrosMatchesStrconv checks logprob-shaped values (whole
// millionths, as logprobsFor rounds them) and arbitrary ones.
func TestAppendMicrosMatchesStrconv(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for k := -2_000_000; k <= 2_000_000; k += 1 + r.IntN(7) {
		if f := math.Round(float64(k)/1e6*1e6) / 1e6; !checkMicros(t, f) && f != 0 {
			t.Fatalf("appendMicros refused %v", f)
		}
	}
	for range 200000 {
		checkMicros(t, math.Round(-r.Float64()*math.Pow(10, float64(r.IntN(13)-3))*1e6)/1e6)
		checkMicros(t, r.NormFloat64()*math.Pow(10, float64(r.IntN(20)-10)))
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1e-6, -1e-6, 1e-7, 999999.999999, 1e6, -1e6, 5e-324, math.Inf(1), math.NaN(), 0.1, 0.3, 1.0000005} {
		checkMicros(t, f)
	}
}

// FuzzAppendMicros compares appendMicros with strconv on any float.
func FuzzAppendMicros(f *testing.F) {
	f.Add(-0.000123)
	f.Add(-12.5)
	f.Fuzz(func(t *testing.T, v float64) {
		checkMicros(t, v)
		checkMicros(t, math.Round(v*1e6)/1e6)
	})
}
