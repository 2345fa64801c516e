package commands

import (
	"strings"
	"testing"
)

// TestMDMessage: a long message in a Markdown plan (a problem, a hold, the
// pull request's error) keeps its end, which says what to do, and is cut
// in its middle; a value (mdCode) is cut at its end, as printable.String
// cuts it, and a pipe or a backtick cannot break the cell.
func TestMDMessage(t *testing.T) {
	msg := "policy apps:web: " + strings.Repeat("tag ", 1000) + "| held `back`; remove minAge from the policy"
	got := mdMessage(msg)
	if !strings.HasSuffix(got, "remove minAge from the policy``") || !strings.Contains(got, "bytes)…") || len(got) > 3000 {
		t.Errorf("mdMessage cut the end, or did not cut: %q", got)
	}
	if !strings.Contains(got, `\| held`) || !strings.HasPrefix(got, "``policy apps:web: ") {
		t.Errorf("the cell can break: %q", got)
	}
	if v := mdCode(strings.Repeat("x", 1000)); !strings.Contains(v, "more bytes)") {
		t.Errorf("mdCode kept a long value whole: %q", v[:40])
	}
}
