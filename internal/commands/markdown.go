package commands

import (
	"fmt"
	"io"
	"strings"

	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/internal/mdcell"
	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/pullrequest"
)

// writePlanMarkdown renders a plan as GitHub-flavoured Markdown, ready to
// post as a pull-request comment: a table of the changes, the problems,
// the tags held back and the policies held, and the policies. Every value from a registry or the repository goes
// into a code span, so none of it is read as Markdown or HTML.
func writePlanMarkdown(w io.Writer, rep *cycle.Report, pr *pullrequest.Result, prLine string) error {
	var b strings.Builder
	failed := len(problemLines(rep))
	fmt.Fprintf(&b, "### imagebump plan: %d %s in %d %s, %d %s\n\n",
		len(rep.Changes), plural(len(rep.Changes), "change", "changes"),
		len(rep.FilesChanged), plural(len(rep.FilesChanged), "file", "files"),
		failed, plural(failed, "problem", "problems"))
	switch {
	case len(rep.Markers) == 0 && len(rep.Problems) == 0:
		b.WriteString("No markers found: nothing to keep current.\n")
	case len(rep.Changes) == 0 && rep.FailedPolicies() == 0:
		b.WriteString(noChanges(rep) + ".\n")
	case len(rep.Changes) == 0:
		b.WriteString("No changes for the policies that resolved; the markers of the failed ones are left as they are.\n")
	default:
		b.WriteString("| File | Line | Policy | From | To |\n| --- | ---: | --- | --- | --- |\n")
		for _, c := range rep.Changes {
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", mdCode(c.File), c.Line, mdCode(policyField(c.Policy, c.Field)), mdCode(c.Old), mdCode(c.New))
		}
	}
	if lines := problemLines(rep); len(lines) > 0 {
		b.WriteString("\n**Problems**\n\n")
		for _, l := range lines {
			fmt.Fprintf(&b, "- %s\n", mdMessage(l))
		}
	}
	if lines := holdLines(rep); len(lines) > 0 {
		b.WriteString("\n**Held**\n\n")
		for _, l := range lines {
			fmt.Fprintf(&b, "- %s\n", mdMessage(l))
		}
	}
	if len(rep.Policies) > 0 {
		b.WriteString("\n<details><summary>Policies</summary>\n\n| Policy | Image | Latest |\n| --- | --- | --- |\n")
		for _, p := range rep.Policies {
			latest := mdCode(p.Latest())
			if p.Err != nil {
				latest = "failed"
			} else if p.Digest != "" {
				latest = mdCode(p.Latest() + "@" + p.Digest)
			}
			if p.Held != nil && p.Err == nil {
				latest += " (held)"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", mdCode(p.Name), mdCode(p.Repository), latest)
		}
		b.WriteString("\n</details>\n")
	}
	if pr != nil {
		fmt.Fprintf(&b, "\nPull request: %s\n", mdCode(describePR(pr, true)))
	}
	if prLine != "" {
		fmt.Fprintf(&b, "\nPull request: %s\n", mdMessage(prLine))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdCode puts s in a Markdown code span usable in a table cell: control
// characters escaped, the fence longer than any run of backticks inside,
// and pipes escaped (GitHub splits cells on them even in code spans).
func mdCode(s string) string { return mdcell.Code(printable.String(s)) }

// mdMessage is mdCode for a message: a long one is cut in its middle
// (printable.Message), so that its end, which says what to do, stays.
func mdMessage(s string) string { return mdcell.Code(printable.Message(s)) }
