package score

import (
	"strconv"
	"strings"
	"unicode"
)

// The GAIA scorer is Python; these helpers reproduce the Python built-ins it relies on, so that the Go
// scorer gives the same verdict on the same strings: float(), str.isspace (used by re's \s), str.lower
// and string.punctuation.

// pyPunctuation is Python's string.punctuation.
const pyPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// isPySpace reports whether Python's str.isspace holds for r: Unicode White_Space plus the ASCII
// information separators U+001C..U+001F, which Python also treats as whitespace.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// pyFloat parses s as Python's float(str) does: surrounding whitespace, an optional sign, decimal
// digits of any script, single underscores between digits, an optional exponent, and the words inf,
// infinity and nan in any case. Out-of-range values become ±Inf or 0 as in Python. ok is false when
// Python would raise ValueError.
func pyFloat(s string) (v float64, ok bool) {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x80:
			if r == 0 {
				return 0, false
			}
			b.WriteRune(r)
		case isPySpace(r):
			b.WriteByte(' ')
		case unicode.IsDigit(r):
			b.WriteByte(byte('0' + digitValue(r)))
		default:
			return 0, false
		}
	}
	t := strings.Trim(b.String(), " \t\n\v\f\r\x1c\x1d\x1e\x1f")
	clean, ok := pyFloatSyntax(t)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(clean, 64)
	if err != nil {
		if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	return f, true
}

// digitValue returns the decimal value of a Unicode Nd digit: Nd digits come in contiguous runs of
// ten starting at zero, so the value is the distance from the run's start, modulo ten.
func digitValue(r rune) int {
	n := 0
	for unicode.IsDigit(r - rune(n) - 1) {
		n++
	}
	return n % 10
}

// pyFloatSyntax checks t (ASCII, trimmed) against Python's float grammar and returns it with
// underscores removed, ready for strconv.ParseFloat.
func pyFloatSyntax(t string) (string, bool) {
	i := 0
	if i < len(t) && (t[i] == '+' || t[i] == '-') {
		i++
	}
	switch strings.ToLower(t[i:]) {
	case "inf", "infinity", "nan":
		return t, true
	}
	var out strings.Builder
	out.WriteString(t[:i])
	digitpart := func() bool {
		start := i
		for i < len(t) {
			c := t[i]
			if c >= '0' && c <= '9' {
				out.WriteByte(c)
				i++
				continue
			}
			if c == '_' && i > start && i+1 < len(t) && t[i+1] >= '0' && t[i+1] <= '9' {
				i++
				continue
			}
			break
		}
		return i > start
	}
	intPart := digitpart()
	fracPart := false
	if i < len(t) && t[i] == '.' {
		out.WriteByte('.')
		i++
		fracPart = digitpart()
	}
	if !intPart && !fracPart {
		return "", false
	}
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		out.WriteByte('e')
		i++
		if i < len(t) && (t[i] == '+' || t[i] == '-') {
			out.WriteByte(t[i])
			i++
		}
		if !digitpart() {
			return "", false
		}
	}
	if i != len(t) {
		return "", false
	}
	return out.String(), true
}

// pyLower lowercases s as Python's str.lower does. Go's simple case mapping differs from Python's full
// mapping in two places that matter for comparisons: U+0130 (İ) lowercases to "i̇", and capital sigma
// lowercases to final sigma (ς) at the end of a word.
func pyLower(s string) string {
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range rs {
		switch r {
		case 'İ':
			b.WriteString("i\u0307")
		case 'Σ':
			if finalSigma(rs, i) {
				b.WriteRune('ς')
			} else {
				b.WriteRune('σ')
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma applies Unicode's Final_Sigma condition as CPython does: a cased letter before position
// i and none after it, skipping case-ignorable characters on both sides.
func finalSigma(rs []rune, i int) bool {
	j := i - 1
	for j >= 0 && caseIgnorable(rs[j]) {
		j--
	}
	if j < 0 || !cased(rs[j]) {
		return false
	}
	k := i + 1
	for k < len(rs) && caseIgnorable(rs[k]) {
		k++
	}
	return k == len(rs) || !cased(rs[k])
}

func cased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r)
}

// caseIgnorable approximates Unicode's Case_Ignorable property: marks, format characters, modifier
// letters and symbols, and the word-internal punctuation ' . : · and the right single quote.
func caseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', '·', '’', '‘', '\u00ad', '\u2024', '\ufe52', '\uff07', '\uff0e':
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}
