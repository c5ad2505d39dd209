package llm

import (
	"encoding/binary"
	"slices"
	"strconv"
)

// digitPairs holds "00" to "99", so a small integer is written two digits
// per step.
var digitPairs = func() (t [200]byte) {
	for i := range 100 {
		t[2*i], t[2*i+1] = byte('0'+i/10), byte('0'+i%10)
	}
	return t
}()

// smallIntMax bounds the integers appendInt writes itself; token ids are
// far below it.
const smallIntMax = 1_000_000

// appendInt appends the decimal form of v exactly as strconv.AppendInt(b,
// int64(v), 10) does. The response's token-id lists hold thousands of small
// ids, and strconv's general 64-bit path with an append per id was most of
// their encoding cost; from 0 to smallIntMax-1 the digits are written in
// place, two per table look-up.
func appendInt(b []byte, v int) []byte {
	if uint(v) >= smallIntMax {
		return strconv.AppendInt(b, int64(v), 10)
	}
	x := uint32(v)
	n := 1
	switch {
	case x >= 100_000:
		n = 6
	case x >= 10_000:
		n = 5
	case x >= 1_000:
		n = 4
	case x >= 100:
		n = 3
	case x >= 10:
		n = 2
	}
	b = slices.Grow(b, n)
	end := len(b) + n
	out := b[len(b):end]
	i := n
	for x >= 100 {
		q := x / 100
		r := (x - q*100) * 2
		i -= 2
		out[i], out[i+1] = digitPairs[r], digitPairs[r+1]
		x = q
	}
	if x >= 10 {
		out[1], out[0] = digitPairs[x*2+1], digitPairs[x*2]
	} else {
		out[0] = byte('0' + x)
	}
	return b[:end]
}

// commaIntsMax bounds the integers of the commaInts table: above the
// vocabulary size, so every token id has an entry.
const commaIntsMax = 1 << 13

// commaInts holds, for each v below commaIntsMax, the bytes of "," + v in
// its low bytes and their count in its top byte: writing an id is one
// unaligned 8-byte store.
var commaInts = func() (t [commaIntsMax]uint64) {
	var w [8]byte
	for v := range t {
		s := appendInt(append(w[:0], ','), v)
		w[7] = byte(len(s))
		t[v] = binary.LittleEndian.Uint64(w[:])
	}
	return t
}()

// maxCommaInt is the longest entry of commaInts: a comma and four digits.
const maxCommaInt = 5

// appendIntList appends v as a JSON list, as encoding/json writes a
// non-nil []int. Ids in the table are stored eight bytes at a time into
// spare capacity reserved for the whole list; others go through appendInt.
func appendIntList(b []byte, v []int) []byte {
	if len(v) == 0 {
		return append(b, '[', ']')
	}
	// Each table entry needs 8 writable bytes but advances maxCommaInt.
	b = slices.Grow(b, len(v)*maxCommaInt+8)
	start := len(b)
	n := start
	b = b[:cap(b)]
	for i, x := range v {
		if uint(x) < commaIntsMax {
			w := commaInts[x]
			binary.LittleEndian.PutUint64(b[n:], w)
			n += int(w >> 56)
			continue
		}
		b = appendInt(append(b[:n], ','), x)
		b = slices.Grow(b, (len(v)-i)*maxCommaInt+8)
		n = len(b)
		b = b[:cap(b)]
	}
	b[start] = '['
	return append(b[:n], ']')
}
