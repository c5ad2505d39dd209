// Package didyoumean finds the name a user probably meant: a flag, a
// command or a YAML key misspelt.
package didyoumean

import "strings"

// Suggest returns the candidate closest to name when it is close enough to
// be the one meant (a typo, a dash left out: --batchsize for --batch-size),
// or "".
func Suggest(name string, candidates []string) string {
	squash := func(s string) string {
		return strings.ToLower(strings.NewReplacer("-", "", "_", "", ".", "").Replace(s))
	}
	best, bestD := "", 0
	for _, c := range candidates {
		if squash(c) == squash(name) {
			return c
		}
		d := EditDistance(name, c)
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	if best != "" && bestD <= max(2, min(3, len(name)/3)) {
		return best
	}
	return ""
}

// EditDistance is the Levenshtein distance of a and b.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
