// Package nearname finds the name a person probably meant: the
// did-you-mean of every message about a configuration key, a tag or a
// table rule. It imports nothing of leafproxy, so config and the
// allocator can both use it.
package nearname

import "strings"

// Suggest returns the candidate closest to name when it is close enough to
// be a typo ("" if none is): at most one edit for names up to 4
// characters, two up to 10, three beyond (a swap of adjacent characters
// counts as one edit). name is compared in lower case.
func Suggest(name string, candidates []string) string {
	best, bestDistance := "", 1<<30
	lower := strings.ToLower(name)
	for _, c := range candidates {
		d := EditDistance(lower, c)
		if d < bestDistance {
			best, bestDistance = c, d
		}
	}
	limit := 1
	if len(name) > 4 {
		limit = 2
	}
	if len(name) > 10 {
		limit = 3
	}
	if bestDistance <= limit {
		return best
	}
	return ""
}

// EditDistance is the optimal-string-alignment distance between a and b,
// counted in runes: insertions, deletions, substitutions and swaps of
// adjacent characters cost one.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
