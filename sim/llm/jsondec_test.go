package llm

import (
	"encoding/binary"
	"testing"
)

// FuzzHasStringStop checks the eight-byte test against strStops.
func FuzzHasStringStop(f *testing.F) {
	f.Add(uint64(0x2020202020202020))
	f.Add(uint64(0x8022805c1f7f0000))
	f.Fuzz(func(t *testing.T, x uint64) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], x)
		want := false
		for _, c := range b {
			want = want || strStops[c]
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
			for _, fill := range []byte{'a', 0x80, 0xff, 0x21, 0x5d} {
				var b [8]byte
				for i := range b {
					b[i] = fill
				}
				b[pos] = byte(c)
				if got, want := hasStringStop(binary.LittleEndian.Uint64(b[:])), strStops[c]; got != want {
					t.Fatalf("hasStringStop(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
}
