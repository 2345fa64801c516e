package serve

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/imagebump/imagebump/config"
)

// hostileStatus is a status whose strings come from outside (tags,
// registry errors, a forge's URL, a webhook's image) and try to inject
// markup.
func hostileStatus() Status {
	now := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	next := now.Add(4 * time.Minute)
	return Status{
		Version: 1, Started: now.Add(-time.Hour), Now: now, Ready: true,
		Config: ConfigStatus{File: "/etc/imagebump/<b>imagebump</b>.yaml", Loaded: now.Add(-time.Hour)},
		Targets: []TargetStatus{{
			Name: "prod", Repository: "https://github.com/acme/fleet.git", Branch: "main", Schedule: "5m",
			NextRun: &next, NextReason: ReasonSchedule, CyclesRun: 1, Markers: 1,
			Policies: []PolicyStatus{{
				Name: "apps:web", Repository: "ghcr.io/acme/web", Latest: `"><script>alert(1)</script>`,
				Seen: 3, Candidates: 1, Error: `<img src=x onerror=alert(2)>`, Checked: now,
				Held: &HoldStatus{Reason: `<iframe src="https://evil.example">`},
			}},
			Cycles: []CycleStatus{{
				Started: now.Add(-time.Minute), Reason: ReasonTrigger, Triggers: []string{"webhook r: ghcr.io/acme/web:<svg onload=alert(3)>"},
				Result: ResultPartial, Commit: "0123456789abcdef0123456789abcdef01234567", Pushed: true,
				PullRequest: &PullRequestStatus{Provider: "github", Number: 7, URL: "javascript:alert(4)", Outcome: "opened"},
				Problems:    []string{"deploy/x.yaml:3: <script>alert(5)</script>"}, ProblemsTotal: 1,
			}},
		}},
		Webhooks: []WebhookStatus{{Name: "r", Path: "/hook/r", Auth: "bearer", Refused: 1, Last: &WebhookRequest{Time: now, Status: 400, Result: hookBadRequest, Error: `<b onmouseover=alert(6)>`}}},
	}
}

// TestStatusPageEscapes renders a status full of markup: every value is
// text on the page, a javascript: URL is neutralised, and no element,
// attribute or script comes from the data.
func TestStatusPageEscapes(t *testing.T) {
	var buf bytes.Buffer
	if err := renderPage(&buf, hostileStatus()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	doc, err := html.Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for n := range doc.Descendants() {
		switch n.Type {
		case html.ElementNode:
			switch n.Data {
			case "script", "iframe", "img", "svg", "b":
				t.Errorf("the data made a <%s> element", n.Data)
			}
			for _, a := range n.Attr {
				if strings.HasPrefix(a.Key, "on") {
					t.Errorf("the data made an event attribute %s=%q", a.Key, a.Val)
				}
				if a.Key == "href" && strings.HasPrefix(strings.ToLower(a.Val), "javascript:") {
					t.Errorf("a javascript: link: %q", a.Val)
				}
			}
		case html.TextNode:
			text.WriteString(n.Data)
		}
	}
	for _, s := range []string{`"><script>alert(1)</script>`, `<img src=x onerror=alert(2)>`, `<iframe src="https://evil.example">`,
		"<svg onload=alert(3)>", "<script>alert(5)</script>", "<b onmouseover=alert(6)>", "/etc/imagebump/<b>imagebump</b>.yaml"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("the page does not show %q as text", s)
		}
	}
}

// TestStatusPageHeaders checks what GET / answers: HTML, and a
// Content-Security-Policy that forbids scripts and allows the page's one
// stylesheet by its hash, which must be the hash of the <style> the page
// holds.
func TestStatusPageHeaders(t *testing.T) {
	s := newTestServer(t)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET / = %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	csp := rec.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") || strings.Contains(csp, "unsafe") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	m := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatal("no <style> on the page")
	}
	sum := sha256.Sum256([]byte(m[1]))
	if want := "style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, want) {
		t.Errorf("Content-Security-Policy %q does not allow the page's stylesheet (%s)", csp, want)
	}
	if strings.Contains(strings.ToLower(rec.Body.String()), "<script") {
		t.Error("the page has a script")
	}
	for path, code := range map[string]int{"/nope": http.StatusNotFound, "/index.html": http.StatusNotFound} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != code {
			t.Errorf("GET %s = %d, want %d", path, rec.Code, code)
		}
	}
}

// TestRoughDuration pins the page's short durations.
func TestRoughDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		12 * time.Second: "12s", 3*time.Minute + 5*time.Second: "3m05s", 2*time.Hour + 7*time.Minute: "2h07m", 50 * time.Hour: "2d2h",
	} {
		if got := roughDuration(d); got != want {
			t.Errorf("roughDuration(%v) = %q, want %q", d, got, want)
		}
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if got, want := when(now.Add(90*time.Second), now), "2026-01-02 03:05:35 UTC (in 1m30s)"; got != want {
		t.Errorf("when = %q, want %q", got, want)
	}
	if got := when((*time.Time)(nil), now); got != "" {
		t.Errorf("when(nil) = %q", got)
	}
}

// newTestServer builds a Server of one target, not run.
func newTestServer(t *testing.T) *Server {
	t.Helper()
	cfg, err := config.Parse([]byte(`images: [{name: app, repository: ghcr.io/acme/app, policy: {semver: ">=1"}}]
git: {url: "https://git.example/fleet.git"}
`), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Config: cfg, Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStatusPageOverdue: a cycle whose time has passed and that has not
// started is shown waiting for a slot, not as planned in the past.
func TestStatusPageOverdue(t *testing.T) {
	st := hostileStatus()
	late := st.Now.Add(-3 * time.Minute)
	st.Targets[0].NextRun = &late
	var buf bytes.Buffer
	if err := renderPage(&buf, st); err != nil {
		t.Fatal(err)
	}
	if want := "due since 2026-12-01 22:57:00 UTC (3m00s ago) (schedule): waiting for a free slot (--concurrency)"; !strings.Contains(buf.String(), want) {
		t.Errorf("page lacks %q", want)
	}
	soon := st.Now.Add(4 * time.Minute)
	st.Targets[0].NextRun = &soon
	buf.Reset()
	if err := renderPage(&buf, st); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "waiting for a free slot") {
		t.Error("a cycle planned in 4 minutes is shown waiting for a slot")
	}
}
