package serve

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"math"
	"net/http"
	"time"
)

// The status page is the Status document (the one /api/v1/status serves)
// rendered by html/template, which escapes every value for where it lands
// (text, attribute, URL), so that a tag name, an error or a pull request
// URL from a forge cannot inject markup. It has no script at all: it works
// with JavaScript off, and its Content-Security-Policy forbids scripts,
// frames, forms and every origin but its own inline stylesheet (allowed by
// hash).
var (
	//go:embed page/status.html
	pageHTML string
	//go:embed page/status.css
	pageCSS string

	pageTemplate = template.Must(template.New("status").Funcs(template.FuncMap{
		"css":     func() template.CSS { return template.CSS(pageCSS) },
		"when":    when,
		"overdue": overdue,
		"stamp":   stamp,
		"seconds": seconds,
		"short":   shortCommit,
		"index0": func(cs []CycleStatus) *CycleStatus {
			if len(cs) == 0 {
				return nil
			}
			return &cs[0]
		},
	}).Parse(pageHTML))

	pageCSP = func() string {
		sum := sha256.Sum256([]byte(pageCSS))
		return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; " +
			"img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	}()
)

// renderPage writes the status page of st.
func renderPage(w io.Writer, st Status) error {
	return pageTemplate.Execute(w, st)
}

// servePage answers GET / with the status page.
func (s *Server) servePage(w http.ResponseWriter, _ *http.Request) {
	var buf bytes.Buffer
	if err := renderPage(&buf, s.Status()); err != nil {
		s.log.Error("rendering the status page", "error", err)
		http.Error(w, "rendering the status page failed; /api/v1/status has the same status", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
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
	d := t.Sub(now)
	rel := "now"
	switch {
	case d >= time.Second:
		rel = "in " + roughDuration(d)
	case d <= -time.Second:
		rel = roughDuration(-d) + " ago"
	}
	return t.UTC().Format(stampLayout) + " (" + rel + ")"
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
