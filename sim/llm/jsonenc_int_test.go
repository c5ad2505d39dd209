package llm

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestAppendIntMatchesStrconv checks appendInt against strconv.AppendInt on
// every small value and on the edges of the fast path.
func TestAppendIntMatchesStrconv(t *testing.T) {
	check := func(v int) {
		t.Helper()
		prefix := []byte("x,")
		got := string(appendInt(prefix, v))
		want := string(strconv.AppendInt([]byte("x,"), int64(v), 10))
		if got != want {
			t.Fatalf("appendInt(%d) = %q, want %q", v, got, want)
		}
	}
	for v := -1000; v < 2*smallIntMax; v++ {
		check(v)
	}
	for _, v := range []int{math.MinInt64, math.MaxInt64, -smallIntMax, 1 << 32, -(1 << 32)} {
		check(v)
	}
}

// FuzzAppendInt compares appendInt with strconv.AppendInt on any value.
func FuzzAppendInt(f *testing.F) {
	for _, v := range []int64{0, 9, 10, 99, 100, 999999, 1000000, -1, math.MaxInt64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v int64) {
		if got, want := string(appendInt(nil, int(v))), strconv.FormatInt(v, 10); got != want {
			t.Fatalf("appendInt(%d) = %q, want %q", v, got, want)
		}
	})
}

// TestAppendIntListMatchesEncodingJSON checks appendIntList against
// json.Marshal on lists mixing table ids with large and negative values,
// appended after existing bytes.
func TestAppendIntListMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		v := make([]int, r.IntN(40))
		for i := range v {
			switch r.IntN(8) {
			case 0:
				v[i] = r.IntN(1<<40) - 1<<39
			case 1:
				v[i] = []int{math.MinInt64, math.MaxInt64, -1, commaIntsMax - 1, commaIntsMax, 0}[r.IntN(6)]
			default:
				v[i] = r.IntN(commaIntsMax)
			}
		}
		want, _ := json.Marshal(v)
		prefix := make([]byte, r.IntN(3), r.IntN(16)+3)
		got := appendIntList(prefix, v)
		if string(got[len(prefix):]) != string(want) {
			t.Fatalf("appendIntList(%v) = %s, want %s", v, got[len(prefix):], want)
		}
	}
}

// BenchmarkAppendIntList compares writing a prompt's worth of token ids
// with appendIntList and with strconv.AppendInt.
func BenchmarkAppendIntList(b *testing.B) {
	ids := make([]int, 3000)
	for i := range ids {
		ids[i] = (i * 7919) % 2000
	}
	buf := make([]byte, 0, 32<<10)
	b.Run("appendIntList", func(b *testing.B) {
		for b.Loop() {
			buf = appendIntList(buf[:0], ids)
		}
	})
	b.Run("strconv", func(b *testing.B) {
		for b.Loop() {
			buf = append(buf[:0], '[')
			for i, id := range ids {
				if i > 0 {
					buf = append(buf, ',')
				}
				buf = strconv.AppendInt(buf, int64(id), 10)
			}
			buf = append(buf, ']')
		}
	})
}
