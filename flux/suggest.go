package flux

import (
	"fmt"
	"slices"
	"strings"

	"github.com/imagebump/imagebump/internal/typo"
)

// SuggestPolicy returns a hint for a marker naming a policy (NAMESPACE:NAME
// or NAME, short for default:NAME) that none of known (policy names in
// NAMESPACE:NAME form) is: the same name in other namespaces, or else the
// closest name. It returns "" when nothing is close.
//
//	SuggestPolicy("default:podinfo", []string{"flux-system:podinfo"})
//	// `did you mean "flux-system:podinfo"? Flux objects' policies are in their namespace`
func SuggestPolicy(name string, known []string) string {
	if !strings.Contains(name, ":") {
		name = "default:" + name
	}
	ns, base, _ := strings.Cut(name, ":")
	var sameName []string
	for _, k := range known {
		kns, kbase, _ := strings.Cut(k, ":")
		if kbase == base && kns != ns {
			sameName = append(sameName, k)
		}
	}
	slices.Sort(sameName)
	switch len(sameName) {
	case 0:
	case 1:
		return fmt.Sprintf("did you mean %q? A policy's namespace is part of its name", sameName[0])
	default:
		return fmt.Sprintf("did you mean one of %s? A policy's namespace is part of its name", quoteList(sameName))
	}
	if c := closest(name, known); c != "" {
		return fmt.Sprintf("did you mean %q?", c)
	}
	return ""
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

// closest returns the candidate nearest to s by edit distance (ties: the
// first in byte order), if the distance is small for the length: at most
// 1 for up to 4 bytes, 2 up to 12, else a quarter of the length, capped
// at 4.
func closest(s string, candidates []string) string {
	limit := 1
	switch {
	case len(s) > 12:
		limit = min(4, len(s)/4)
	case len(s) > 4:
		limit = 2
	}
	best, bestDist := "", limit+1
	for _, c := range candidates {
		d := typo.Distance(strings.ToLower(s), strings.ToLower(c))
		if d < bestDist || (d == bestDist && c < best) {
			best, bestDist = c, d
		}
	}
	if bestDist > limit || bestDist >= len(s) {
		return ""
	}
	return best
}
