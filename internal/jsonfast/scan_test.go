package jsonfast

import (
	"encoding/binary"
	"math"
	"testing"
)

// isStringStop is hasStringStop's rule for one byte.
func isStringStop(c byte) bool { return c < 0x20 || c == '"' || c == '\\' }

// FuzzHasStringStop checks the eight-byte test against the byte rule.
func FuzzHasStringStop(f *testing.F) {
	f.Add(uint64(0x2020202020202020))
	f.Add(uint64(0x8022805c1f7f0000))
	f.Fuzz(func(t *testing.T, x uint64) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], x)
		want := false
		for _, c := range b {
			want = want || isStringStop(c)
		}
		if got := hasStringStop(x); got != want {
			t.Fatalf("hasStringStop(%#x) = %v, want %v", x, got, want)
		}
	})
}

// TestHasStringStopEveryByte checks each byte value in each position, among
// bytes that are no stop.
func TestHasStringStopEveryByte(t *testing.T) {
	for pos := range 8 {
		for c := range 256 {
			for _, fill := range []byte{'a', 0x80, 0xff, 0x21, 0x5d, ' '} {
				var b [8]byte
				for i := range b {
					b[i] = fill
				}
				b[pos] = byte(c)
				if got, want := hasStringStop(binary.LittleEndian.Uint64(b[:])), isStringStop(byte(c)); got != want {
					t.Fatalf("hasStringStop(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
}

// TestScannerNumbers checks the integer readers' limits.
func TestScannerNumbers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"-7", -7, true}, {" 42,", 42, true}, {"123456789012345678", 123456789012345678, true},
		{"1234567890123456789", 1234567890123456789, true}, {"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true}, {"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
		{"18446744073709551616", 0, false}, {"12345678901234567890", 0, false}, {"01", 0, false}, {"1.5", 0, false}, {"1e3", 0, false}, {"-", 0, false}, {"", 0, false},
	} {
		s := Scanner{B: []byte(tc.in)}
		if got, ok := s.Int64(); got != tc.want || ok != tc.ok {
			t.Errorf("Int64(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
		s = Scanner{B: []byte(tc.in)}
		if got, ok := s.Int(); int64(got) != tc.want || ok != tc.ok {
			t.Errorf("Int(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
