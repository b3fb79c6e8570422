// Package suggest finds the "did you mean" for a mistyped word: one
// implementation for keys of workflow and adapter files, template names,
// commands, flags and session ids.
package suggest

import "strings"

// Closest returns the candidate nearest to w within an edit distance of 2,
// ignoring case (so "executionmode" finds "executionMode"), or "". The
// distance must also be less than w's length: otherwise any short word
// would match any other.
func Closest(w string, candidates []string) string {
	lw := strings.ToLower(w)
	n := len([]rune(lw))
	best, bestD := "", 3
	for _, c := range candidates {
		if d := Distance(lw, strings.ToLower(c)); d < bestD && d < n {
			best, bestD = c, d
		}
	}
	return best
}

// Distance is the Levenshtein distance of a and b, counted in runes.
func Distance(a, b string) int {
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
