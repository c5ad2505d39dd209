package llm

import "math"

// maxMicrosAbs bounds the values appendMicros writes. Below it a float64's
// spacing is under 2^-33, far finer than 1e-6, which is what makes the
// fixed-point digits the shortest representation (see appendMicros).
const maxMicrosAbs = 1e6

// appendMicros writes f when it is a whole number of millionths — every
// logprob the server reports is rounded so — exactly as
// strconv.AppendFloat(b, f, 'f', -1, 64) would, without its general
// shortest-digits search; ok is false for any other value (and for zero,
// whose sign needs care), which the caller then formats in full.
//
// Why the output agrees: k/1e6 rounds to f, so the decimal k×10⁻⁶ reads back
// as f. Any other decimal reading back as f lies within half a spacing
// (< 1e-10) of it; with no more significant digits it would be a multiple
// of 10⁻⁶ too, hence equal. So k×10⁻⁶ without trailing zeros is the unique
// shortest representation, the one strconv prints.
func appendMicros(b []byte, f float64) ([]byte, bool) {
	if f == 0 || !(math.Abs(f) < maxMicrosAbs) {
		return b, false
	}
	k := math.Round(f * 1e6)
	if k/1e6 != f {
		return b, false
	}
	if k < 0 {
		b = append(b, '-')
		k = -k
	}
	n := uint64(k)
	b = appendInt(b, int(n/1e6))
	frac := n % 1e6
	if frac == 0 {
		return b, true
	}
	digits := 6
	for frac%10 == 0 {
		frac /= 10
		digits--
	}
	var buf [7]byte
	buf[0] = '.'
	for i := digits; i > 0; i-- {
		buf[i] = byte('0' + frac%10)
		frac /= 10
	}
	return append(b, buf[:digits+1]...), true
}
