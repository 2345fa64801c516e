// Package mdcell writes text into a cell of a Markdown table (GitHub's,
// GitLab's and Gitea's flavour), as a code span: pull request bodies and
// plan -o markdown put file names, policies, tags and messages there, any
// of which may hold a pipe or a backtick.
package mdcell

import "strings"

// Code renders s as a code span fit for a Markdown table cell: line breaks
// become spaces, pipes are escaped (GitHub, GitLab and Gitea unescape them
// inside code spans in tables), and the span's backtick fence is longer
// than any run of backticks in s. An empty s is an empty cell.
func Code(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	if strings.TrimSpace(s) == "" {
		return ""
	}
	s = strings.ReplaceAll(s, "|", `\|`)
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	// A span that starts or ends with a backtick needs a space inside the
	// fence; Markdown strips one space from each side.
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}
