package pullrequest

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/imagebump/imagebump/internal/mdcell"
)

// maxBodyBytes keeps the body under GitHub's limit of 65536 characters;
// rows beyond it are summed up in one line (the content key still covers
// every change).
const maxBodyBytes = 60000

// staleMarker is what Close adds to the body of a pull request it closes
// because the branch no longer proposes anything: such a pull request was
// not turned down, so its bumps may be proposed again.
const staleMarker = "<!-- imagebump:closed-as-stale -->"

// markStale returns body with staleMarker added, once.
func markStale(body string) string {
	if ClosedAsStale(body) {
		return body
	}
	return strings.TrimRight(body, "\n") + "\n\n" + staleMarker + "\n"
}

// ClosedAsStale reports whether imagebump closed the pull request with
// body as proposing nothing, or as an open twin: its bumps were not turned
// down. The marker is the body's last line, where markStale puts it (a
// value quoted in the body's table cannot end it). A provider that lists
// closed pull requests up to the most recent one lists on past these.
func ClosedAsStale(body string) bool {
	return strings.HasSuffix(strings.TrimSpace(body), staleMarker)
}

// markerPattern finds the content marker that Body writes.
var markerPattern = regexp.MustCompile(`<!-- imagebump:content=([0-9a-f]{64}) -->`)

// Body returns the Markdown body of a pull request that proposes changes:
// a short introduction, a table with the columns File, Policy, Old and New
// (one row per change, sorted, each cell a code span with pipes and
// backticks escaped), and a hidden marker
// <!-- imagebump:content=KEY --> holding ContentKey(changes). The same set
// of changes gives the same body, in whatever order they come.
func Body(changes []Change) string {
	return BodyWithNotes(changes, nil)
}

// BodyWithNotes is Body with notes listed under the table, under "Left
// out of this pull request": what it does not propose, and why (tags a
// gate held back, policies held, policies that failed), one per line, each
// in a code span. Notes do not count in the content key.
func BodyWithNotes(changes []Change, notes []string) string {
	return body(changes, notes, nil)
}

// labelsPattern finds the labels marker that body writes.
var labelsPattern = regexp.MustCompile(`<!-- imagebump:labels=(\[.*?\]) -->`)

// body is BodyWithNotes that also records labels, the labels the
// config gives, in a hidden marker <!-- imagebump:labels=["a","b"] -->
// (none when there are none): an update adds only the labels the record
// lacks, those added to the config since, so that one a person removed
// stays removed (LabelsOf).
func body(changes []Change, notes, labels []string) string {
	sorted := sortChanges(changes)
	files := map[string]bool{}
	for _, c := range sorted {
		files[c.File] = true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "imagebump updates %s in %s.\n\n", plural(len(sorted), "image reference"), plural(len(files), "file"))
	b.WriteString("| File | Policy | Old | New |\n| --- | --- | --- | --- |\n")
	for i, c := range sorted {
		row := "| " + mdcell.Code(c.File) + " | " + mdcell.Code(c.Policy) + " | " + mdcell.Code(c.Old) + " | " + mdcell.Code(c.New) + " |\n"
		if b.Len()+len(row) > maxBodyBytes {
			fmt.Fprintf(&b, "\nand %s more, not listed here.\n", plural(len(sorted)-i, "change"))
			break
		}
		b.WriteString(row)
	}
	if len(notes) > 0 {
		b.WriteString("\nLeft out of this pull request:\n\n")
		for i, n := range notes {
			line := "- " + mdcell.Code(n) + "\n"
			if b.Len()+len(line) > maxBodyBytes {
				fmt.Fprintf(&b, "- and %d more\n", len(notes)-i)
				break
			}
			b.WriteString(line)
		}
	}
	b.WriteString("\nimagebump keeps this pull request current: a newer bump updates it. " +
		"Closing it without merging stops these exact changes from being proposed again.\n")
	b.WriteString("\n")
	if len(labels) > 0 {
		// json.Marshal escapes < and >, so no label ends the comment.
		data, err := json.Marshal(labels)
		if err != nil {
			panic(err) // strings always marshal
		}
		b.WriteString("<!-- imagebump:labels=" + string(data) + " -->\n")
	}
	b.WriteString("<!-- imagebump:content=" + ContentKey(changes) + " -->\n")
	return b.String()
}

// LabelsOf returns the labels recorded in a pull request body that body
// wrote, and whether it holds a record: a body written before imagebump
// recorded them, or for a config without labels, holds none.
func LabelsOf(body string) ([]string, bool) {
	m := labelsPattern.FindAllStringSubmatch(body, -1)
	if len(m) == 0 {
		return nil, false
	}
	var labels []string
	if err := json.Unmarshal([]byte(m[len(m)-1][1]), &labels); err != nil {
		return nil, false
	}
	return labels, true
}

// ContentKey returns the hex SHA-256 of the normalized change set: the
// (file, policy, old, new) of each change, sorted. Line numbers are left
// out, so the same bumps have the same key even when lines moved, and the
// order of changes does not matter.
func ContentKey(changes []Change) string {
	sorted := sortChanges(changes)
	rows := make([][4]string, len(sorted))
	for i, c := range sorted {
		rows[i] = [4]string{c.File, c.Policy, c.Old, c.New}
	}
	// JSON keeps the encoding unambiguous whatever the values contain.
	data, err := json.Marshal(rows)
	if err != nil {
		panic(err) // strings always marshal
	}
	sum := sha256.Sum256(append([]byte("imagebump content v1\n"), data...))
	return hex.EncodeToString(sum[:])
}

// ContentKeyOf returns the content key in a pull request body written by
// Body, or "" when it holds none. When the body holds several markers (a
// value that looks like one), the last one counts: Body writes it last.
func ContentKeyOf(body string) string {
	m := markerPattern.FindAllStringSubmatch(body, -1)
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1][1]
}

func sortChanges(changes []Change) []Change {
	sorted := slices.Clone(changes)
	slices.SortStableFunc(sorted, func(a, b Change) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Policy, b.Policy),
			cmp.Compare(a.Old, b.Old),
			cmp.Compare(a.New, b.New),
		)
	})
	return sorted
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
