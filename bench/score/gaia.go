package score

import (
	"math"
	"strings"
)

// This file reproduces GAIA's official question_scorer (gaia-benchmark leaderboard, scorer.py) step
// by step; every branch below mirrors the Python one, including its quirks (an unparsable number
// becomes +Inf, so it equals a ground truth of "inf"; a ground truth like "1,000" is not a float and so
// is scored as a two-element list).

// NormalizeNumberStr removes "$", "%" and "," from s and parses the rest as a Python float. When
// that fails it returns +Inf, as the official scorer does.
func NormalizeNumberStr(s string) float64 {
	for _, c := range []string{"$", "%", ","} {
		s = strings.ReplaceAll(s, c, "")
	}
	if v, ok := pyFloat(s); ok {
		return v
	}
	return math.Inf(1)
}

// SplitString splits s on every "," and ";", keeping empty pieces, like Python's
// re.split("[,;]", s).
func SplitString(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ',' || s[i] == ';' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// NormalizeStr removes all whitespace, lowercases, and, when removePunct is true, removes ASCII
// punctuation (Python's string.punctuation), in that order.
func NormalizeStr(s string, removePunct bool) string {
	var b strings.Builder
	for _, r := range s {
		if !isPySpace(r) {
			b.WriteRune(r)
		}
	}
	lower := pyLower(b.String())
	if !removePunct {
		return lower
	}
	return strings.Map(func(r rune) rune {
		if r < 0x80 && strings.ContainsRune(pyPunctuation, r) {
			return -1
		}
		return r
	}, lower)
}

// QuestionScorer is GAIA's official question_scorer: it reports whether modelAnswer matches
// groundTruth. A ground truth that parses as a number is compared as a float after
// NormalizeNumberStr; one containing "," or ";" is a list compared element by element (numbers as
// floats, strings without whitespace and lowercased, punctuation kept), with a length mismatch being
// false; anything else is compared as strings after NormalizeStr with punctuation removed.
func QuestionScorer(modelAnswer, groundTruth string) bool {
	if gt, ok := pyFloat(groundTruth); ok {
		return NormalizeNumberStr(modelAnswer) == gt
	}
	if strings.ContainsAny(groundTruth, ",;") {
		gtElems := SplitString(groundTruth)
		maElems := SplitString(modelAnswer)
		if len(gtElems) != len(maElems) {
			return false
		}
		all := true
		for i, gtElem := range gtElems {
			if g, ok := pyFloat(gtElem); ok {
				all = all && NormalizeNumberStr(maElems[i]) == g
			} else {
				all = all && NormalizeStr(maElems[i], false) == NormalizeStr(gtElem, false)
			}
		}
		return all
	}
	return NormalizeStr(modelAnswer, true) == NormalizeStr(groundTruth, true)
}
