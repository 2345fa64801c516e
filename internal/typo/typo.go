// Package typo measures how far a word someone typed is from a word that
// was meant, for "did you mean" hints (config keys, Flux field names).
package typo

// maxLen bounds the strings Distance compares: hints are for names, and a
// longer string is never a likely typo of one.
const maxLen = 256

// Far is what Distance returns for strings it does not compare.
const Far = 1 << 30

// Distance is the Levenshtein distance between a and b, in bytes, or Far
// when either is longer than 256 bytes.
func Distance(a, b string) int {
	if len(a) > maxLen || len(b) > maxLen {
		return Far
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
