package serve

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The status page is the Status document (the one /api/v1/status serves)
// rendered by html/template, which escapes every value for where it lands
// (text, attribute, URL), so that a tag name, an error or a pull request
// URL from a forge cannot inject markup. It has no script at all: it works
// with JavaScript off, and its Content-Security-Policy forbids scripts,
// frames, forms and every origin but its own inline stylesheet (allowed by
// hash).
//
// It is two pages, so that it stays small however many targets the
// process runs: the index (GET /) has the process, one summary row per
// target and the webhooks; each target's page (GET /targets/{name}) has
// the target's full details. With up to inlineTargets targets the index
// shows their full details too. Every link between them is relative, so
// that the pages work behind a proxy that serves them under a path.
var (
	//go:embed page/*.html
	pageFiles embed.FS
	//go:embed page/status.css
	pageCSS string

	// pageTemplates are parsed on the first page served, not when the
	// process starts: every command of the binary would pay for it
	// (about 1 ms, a fiftieth of a run with nothing new).
	pageTemplates = sync.OnceValue(func() *template.Template { return template.Must(parsePages()) })

	pageCSP = func() string {
		sum := sha256.Sum256([]byte(pageCSS))
		return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; " +
			"img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	}()
)

// parsePages parses the page templates.
func parsePages() (*template.Template, error) {
	return template.New("").Funcs(template.FuncMap{
		"css":       func() template.CSS { return template.CSS(pageCSS) },
		"when":      when,
		"ago":       ago,
		"since":     since,
		"overdue":   overdue,
		"stamp":     stamp,
		"seconds":   seconds,
		"short":     shortCommit,
		"count":     count,
		"sameError": sameError,
		"index0": func(cs []CycleStatus) *CycleStatus {
			if len(cs) == 0 {
				return nil
			}
			return &cs[0]
		},
		"inline": func(t TargetStatus, now time.Time) targetView {
			return targetView{TargetStatus: t, Now: now, Href: targetHref(t.Name)}
		},
	}).ParseFS(pageFiles, "page/*.html")
}

// inlineTargets is the most targets whose full details the index shows
// below its summary table: the common small deployment sees everything on
// one page, and a large one gets an index of a row per target (about 0.6 kB
// each) instead of every target's details (about 16 kB each).
const inlineTargets = 10

// maxProblemText caps the first problem a summary row quotes, in runes.
const maxProblemText = 100

// indexView is what the index renders.
type indexView struct {
	Status
	// Summaries are the targets' rows: failing targets first, then the
	// others, each group by name.
	Summaries []targetSummary
	// Inline says the index shows every target's details too.
	Inline bool
	// Failing and Running count the targets failing and running a cycle.
	Failing, Running int
}

// targetSummary is a target's row on the index.
type targetSummary struct {
	Name string
	// Removed: a reload removed the target; its last cycle runs.
	Removed bool
	// Href is the target's page, relative to the index.
	Href string
	// Last is the last cycle, nil before the first.
	Last                      *CycleStatus
	RunningSince, NextRun     *time.Time
	NextReason                string
	LastSuccess, FailingSince *time.Time
	ConsecutiveFailures       int
	// Problems counts the last cycle's problems, and its error; FirstProblem
	// quotes the error, or else the first problem, cut to maxProblemText.
	Problems     int
	FirstProblem string
	// PolicyCount counts the last scan's policies, FailedPolicies and
	// HeldPolicies those that failed and those held.
	PolicyCount, FailedPolicies, HeldPolicies int
}

// targetView is what the details of a target render: on the index, with
// Href the link to the target's page; on that page, with Href empty.
type targetView struct {
	TargetStatus
	Now  time.Time
	Href string
}

// targetPageView is what a target's page renders: the target, and whether
// the process is ready.
type targetPageView struct {
	targetView
	Ready    bool
	NotReady []string
}

// targetHref is the link from the index to the page of the target called
// name. The name is one escaped path segment, so that no name can make
// the link leave /targets/ (config takes only RFC 1123 labels anyway; a
// name "." or ".." could not be linked this way, as browsers resolve them
// even escaped).
func targetHref(name string) string { return "targets/" + url.PathEscape(name) }

// summarize makes a target's row on the index.
func summarize(t TargetStatus) targetSummary {
	s := targetSummary{
		Name: t.Name, Href: targetHref(t.Name), Removed: t.Removed,
		RunningSince: t.RunningSince, NextRun: t.NextRun, NextReason: t.NextReason,
		LastSuccess: t.LastSuccess, FailingSince: t.FailingSince, ConsecutiveFailures: t.ConsecutiveFailures,
		PolicyCount: len(t.Policies),
	}
	for _, p := range t.Policies {
		if p.Error != "" {
			s.FailedPolicies++
		}
		if p.Held != nil {
			s.HeldPolicies++
		}
	}
	if len(t.Cycles) > 0 {
		c := t.Cycles[0]
		s.Last = &c
		s.Problems = c.ProblemsTotal
		switch {
		case c.Error != "":
			s.Problems++
			s.FirstProblem = cut(c.Error, maxProblemText)
		case len(c.Problems) > 0:
			s.FirstProblem = cut(c.Problems[0], maxProblemText)
		}
	}
	return s
}

// newIndexView makes the index's view of st.
func newIndexView(st Status) indexView {
	v := indexView{Status: st, Inline: len(st.Targets) <= inlineTargets}
	for _, t := range st.Targets {
		s := summarize(t)
		if s.FailingSince != nil {
			v.Failing++
		}
		if s.RunningSince != nil {
			v.Running++
		}
		v.Summaries = append(v.Summaries, s)
	}
	slices.SortStableFunc(v.Summaries, func(a, b targetSummary) int {
		if af, bf := a.FailingSince != nil, b.FailingSince != nil; af != bf {
			if af {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return v
}

// renderIndex writes the index of st.
func renderIndex(w io.Writer, st Status) error {
	return pageTemplates().ExecuteTemplate(w, "index.html", newIndexView(st))
}

// renderTarget writes the page of st's target t.
func renderTarget(w io.Writer, st Status, t TargetStatus) error {
	return pageTemplates().ExecuteTemplate(w, "target.html", targetPageView{
		targetView: targetView{TargetStatus: t, Now: st.Now},
		Ready:      st.Ready, NotReady: st.NotReady,
	})
}

// findTarget returns the target of st called name; when there is none,
// it says why, in a sentence for a 404.
func findTarget(st Status, name string) (TargetStatus, string) {
	if i := slices.IndexFunc(st.Targets, func(t TargetStatus) bool { return t.Name == name }); i >= 0 {
		return st.Targets[i], ""
	}
	if sh := st.Shard; sh != nil {
		if i := slices.IndexFunc(sh.Elsewhere, func(t ShardTarget) bool { return t.Name == name }); i >= 0 {
			return TargetStatus{}, fmt.Sprintf("target %q is run by shard %d of %d; this process is shard %d", name, sh.Elsewhere[i].Shard, sh.Count, sh.Index)
		}
	}
	return TargetStatus{}, fmt.Sprintf("no target %q in this process's config", name)
}

// pages serves the status page: the index and the targets' pages, made
// anew from status at each request.
type pages struct {
	status func() Status
	log    *slog.Logger
}

// index answers GET / with the index.
func (p pages) index(w http.ResponseWriter, _ *http.Request) {
	var buf bytes.Buffer
	if err := renderIndex(&buf, p.status()); err != nil {
		p.failed(w, err)
		return
	}
	p.write(w, buf.Bytes())
}

// target answers GET /targets/{name} with the target's page, or 404.
func (p pages) target(w http.ResponseWriter, r *http.Request) {
	st := p.status()
	t, why := findTarget(st, r.PathValue("name"))
	if why != "" {
		pageHeaders(w.Header())
		http.Error(w, why, http.StatusNotFound)
		return
	}
	var buf bytes.Buffer
	if err := renderTarget(&buf, st, t); err != nil {
		p.failed(w, err)
		return
	}
	p.write(w, buf.Bytes())
}

// failed logs a page that could not be rendered and answers 500.
func (p pages) failed(w http.ResponseWriter, err error) {
	p.log.Error("rendering the status page", "error", err)
	pageHeaders(w.Header())
	http.Error(w, "rendering the status page failed; /api/v1/status has the same status", http.StatusInternalServerError)
}

// write answers with a rendered page.
func (p pages) write(w http.ResponseWriter, page []byte) {
	h := w.Header()
	pageHeaders(h)
	h.Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(page)
}

// pageHeaders sets the headers of every answer of the status page, its
// errors included.
func pageHeaders(h http.Header) {
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

// stampLayout is how the page writes times: UTC, to the second.
const stampLayout = "2006-01-02 15:04:05 UTC"

// stamp writes a time (a time.Time or a *time.Time).
func stamp(v any) string {
	t, ok := timeOf(v)
	if !ok {
		return ""
	}
	return t.UTC().Format(stampLayout)
}

// when writes a time and how far it is from now: "… (3m ago)", "… (in 12s)".
func when(v any, now time.Time) string {
	t, ok := timeOf(v)
	if !ok {
		return ""
	}
	return t.UTC().Format(stampLayout) + " (" + ago(t, now) + ")"
}

// ago writes how far a time is from now: "3m05s ago", "in 12s", "now".
func ago(v any, now time.Time) string {
	t, ok := timeOf(v)
	if !ok {
		return ""
	}
	switch d := t.Sub(now); {
	case d >= time.Second:
		return "in " + roughDuration(d)
	case d <= -time.Second:
		return roughDuration(-d) + " ago"
	}
	return "now"
}

// since writes how long ago a time was, without "ago": "2h05m"; "0s" for
// a time not past.
func since(v any, now time.Time) string {
	t, ok := timeOf(v)
	if !ok {
		return ""
	}
	return roughDuration(max(now.Sub(t), 0))
}

// count writes n and a noun, plural unless n is 1: "1 cycle", "3 cycles".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// cut shortens s to at most n runes, the last an ellipsis when it cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// overdue reports whether a planned time is a second or more past: a
// cycle whose time has come that waits for a free slot.
func overdue(v any, now time.Time) bool {
	t, ok := timeOf(v)
	return ok && now.Sub(t) >= time.Second
}

func timeOf(v any) (time.Time, bool) {
	switch t := v.(type) {
	case time.Time:
		return t, !t.IsZero()
	case *time.Time:
		if t == nil || t.IsZero() {
			return time.Time{}, false
		}
		return *t, true
	}
	return time.Time{}, false
}

// roughDuration writes d to its two largest units: 45s, 3m12s, 2h5m, 3d4h.
func roughDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// seconds writes a duration in seconds: 0.21 s, 12 s.
func seconds(s float64) string {
	if s < 10 {
		return fmt.Sprintf("%.2f s", s)
	}
	return fmt.Sprintf("%.0f s", math.Round(s))
}

// shortCommit abbreviates a commit hash to 12 digits.
func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// sameError says where the error of cycle i of cs (newest first) is shown
// already, for its row in the page's table of cycles: the last cycle's
// under its problems, another's when the cycle above (newer) had the same;
// "" when it is new there. A target that fails alike for ten cycles showed
// its error, hundreds of characters, eleven times.
func sameError(cs []CycleStatus, i int) string {
	switch {
	case i == 0:
		return "shown under Problems of the last cycle, above"
	case i < len(cs) && cs[i].Error == cs[i-1].Error:
		return "the same error as the cycle above"
	}
	return ""
}
