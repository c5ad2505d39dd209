package llm

import (
	"hash/fnv"
	"math"
	"testing"
)

// fnvAddBytes is fnvAdd written as the plain FNV-1a byte loop.
func fnvAddBytes(h, v uint64) uint64 {
	for shift := 0; shift < 64; shift += 8 {
		h ^= (v >> shift) & 0xff
		h *= fnvPrime
	}
	return h
}

// FuzzFnvAdd checks fnvAdd's two-byte shortcut against the byte loop.
func FuzzFnvAdd(f *testing.F) {
	for _, v := range []uint64{0, 1, 255, 256, 1<<16 - 1, 1 << 16, math.MaxUint64} {
		f.Add(uint64(fnvOffset), v)
	}
	f.Fuzz(func(t *testing.T, h, v uint64) {
		if got, want := fnvAdd(h, v), fnvAddBytes(h, v); got != want {
			t.Fatalf("fnvAdd(%#x, %d) = %#x, want %#x", h, v, got, want)
		}
	})
}

// TestFnvAddIsFNV1a checks fnvAdd against hash/fnv on every two-byte value.
func TestFnvAddIsFNV1a(t *testing.T) {
	for v := uint64(0); v < 1<<17; v++ {
		f := fnv.New64a()
		var b [8]byte
		for i := range b {
			b[i] = byte(v >> (8 * i))
		}
		_, _ = f.Write(b[:])
		if got, want := fnvAdd(fnvOffset, v), f.Sum64(); got != want {
			t.Fatalf("fnvAdd(offset, %d) = %#x, want %#x", v, got, want)
		}
	}
}

// TestNewMixIsFNV1a checks newMix's starting state against hash/fnv.
func TestNewMixIsFNV1a(t *testing.T) {
	for _, tag := range []string{"", "sample", "prompt", "lp", "alt", "gap", "id", "\xff日本"} {
		f := fnv.New64a()
		_, _ = f.Write([]byte(tag))
		if got, want := newMix(tag).h, f.Sum64(); got != want {
			t.Errorf("newMix(%q).h = %#x, want %#x", tag, got, want)
		}
	}
}
