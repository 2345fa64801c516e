package serve

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

// TestStatusPageEscapes renders a status full of markup on each page
// that shows it (the index with the target's details inline, the index of
// a fleet too large for that, the target's own page): every value is text
// on the page, a javascript: URL is neutralised, and no element, attribute
// or script comes from the data.
func TestStatusPageEscapes(t *testing.T) {
	st := hostileStatus()
	large := hostileStatus()
	for i := range inlineTargets {
		large.Targets = append(large.Targets, TargetStatus{Name: fmt.Sprintf("quiet-%d", i)})
	}
	// Strings of the target's details; the index of a large fleet shows
	// only its row, with the start of its problem.
	details := []string{`"><script>alert(1)</script>`, `<img src=x onerror=alert(2)>`, `<iframe src="https://evil.example">`,
		"<svg onload=alert(3)>", "<script>alert(5)</script>"}
	process := []string{"<b onmouseover=alert(6)>", "/etc/imagebump/<b>imagebump</b>.yaml"}
	for _, tc := range []struct {
		name   string
		render func(io.Writer) error
		want   []string
	}{
		{"index with details", func(w io.Writer) error { return renderIndex(w, st) }, append(details, process...)},
		{"index of rows", func(w io.Writer) error { return renderIndex(w, large) }, append([]string{"deploy/x.yaml:3: <script>alert(5)</script>"}, process...)},
		{"target page", func(w io.Writer) error { return renderTarget(w, st, st.Targets[0]) }, details},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.render(&buf); err != nil {
				t.Fatal(err)
			}
			text := checkMarkup(t, buf.String())
			for _, s := range tc.want {
				if !strings.Contains(text, s) {
					t.Errorf("the page does not show %q as text", s)
				}
			}
		})
	}
}

// checkMarkup parses a page, fails the test for each element, event
// attribute or javascript: link the data could have made, and returns the
// page's text.
func checkMarkup(t *testing.T, page string) string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
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
	return text.String()
}

// hostileNames are target names that config refuses (it takes RFC 1123
// labels only) but the pages must still show as text and link safely.
var hostileNames = []string{"<script>alert(7)</script>", "../x", "a/b", "..%2Fy", "a b?c#d", `q"uote'`, "javascript:alert(8)", "ünï"}

// hostileFleet is fleetStatus(n) with a target of each hostile name, its
// first target's details copied.
func hostileFleet(n int) Status {
	st := fleetStatus(n)
	for _, name := range hostileNames {
		t := st.Targets[0]
		t.Name = name
		st.Targets = append(st.Targets, t)
	}
	return st
}

// servePages serves the status page of a fixed status on loopback, as
// Server.routes does.
func servePages(t testing.TB, st Status) *httptest.Server {
	t.Helper()
	pg := pages{status: func() Status { return st }, log: slog.New(slog.DiscardHandler)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", pg.index)
	mux.HandleFunc("GET /targets/{name}", pg.target)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// get fetches a URL and returns its answer, the body read whole.
func get(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestStatusPageHandlers asks the index and the targets' pages of a
// fleet with hostile names for each page, as a browser would: what each
// answers, with which headers.
func TestStatusPageHandlers(t *testing.T) {
	for _, size := range []int{2, 40} { // details inline, and rows only
		st := hostileFleet(size)
		srv := servePages(t, st)
		_, index := get(t, srv.URL+"/")
		for _, tc := range []struct {
			name, path string
			code       int
			// in is what the answer holds; out what it must not.
			in, out []string
			// mux says the answer is ServeMux's own 404, without the
			// page's headers.
			mux bool
		}{
			{"index", "/", 200, []string{"cluster-000", "cluster-001", "<h2>Targets</h2>", `id="webhooks"`, `id="shard"`}, nil, false},
			{"target", "/targets/cluster-001", 200, []string{"<title>cluster-001 · imagebump</title>", `<a href="../">`, "team-0:app-0", "Last cycles"}, []string{"cluster-000", `id="webhooks"`}, false},
			{"unknown target", "/targets/nope", 404, []string{`no target "nope" in this process's config`}, []string{"<"}, false},
			{"other shard's target", fmt.Sprintf("/targets/cluster-%03d", size+1), 404, []string{fmt.Sprintf(`target "cluster-%03d" is run by shard 1 of 2; this process is shard 0`, size+1)}, nil, false},
			{"hostile unknown target", "/targets/%3Cscript%3Ealert(9)%3C%2Fscript%3E", 404, []string{`no target "<script>alert(9)</script>"`}, nil, false},
			{"no name", "/targets/", 404, nil, nil, true},
			{"below a target", "/targets/cluster-001/x", 404, nil, nil, true},
			{"dot-dot", "/targets/../", 200, []string{"<h2>Targets</h2>"}, nil, false}, // ServeMux redirects to /
		} {
			t.Run(fmt.Sprintf("%d targets/%s", size, tc.name), func(t *testing.T) {
				resp, body := get(t, srv.URL+tc.path)
				if resp.StatusCode != tc.code {
					t.Fatalf("GET %s = %d, want %d: %s", tc.path, resp.StatusCode, tc.code, body)
				}
				h := resp.Header
				wantType := "text/html; charset=utf-8"
				if tc.code != 200 {
					wantType = "text/plain; charset=utf-8"
				}
				if got := h.Get("Content-Type"); got != wantType {
					t.Errorf("Content-Type %q, want %q", got, wantType)
				}
				if !tc.mux {
					for k, want := range map[string]string{"Content-Security-Policy": pageCSP, "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"} {
						if got := h.Get(k); got != want {
							t.Errorf("%s: %q, want %q", k, got, want)
						}
					}
				}
				for _, s := range tc.in {
					if !strings.Contains(body, s) {
						t.Errorf("the answer lacks %q", s)
					}
				}
				for _, s := range tc.out {
					if strings.Contains(body, s) {
						t.Errorf("the answer holds %q", s)
					}
				}
			})
		}
		// Each target's link on the index, resolved as a browser does,
		// stays under /targets/ and leads to that target's page.
		links := map[string]string{}
		doc, err := html.Parse(strings.NewReader(index))
		if err != nil {
			t.Fatal(err)
		}
		for n := range doc.Descendants() {
			if n.Type == html.ElementNode && n.Data == "a" && n.FirstChild != nil && n.FirstChild.Type == html.TextNode {
				for _, a := range n.Attr {
					if a.Key == "href" && strings.HasPrefix(a.Val, "targets/") {
						links[n.FirstChild.Data] = a.Val
					}
				}
			}
		}
		base, _ := url.Parse(srv.URL + "/")
		for _, ts := range st.Targets {
			t.Run(fmt.Sprintf("%d targets/link to %q", size, ts.Name), func(t *testing.T) {
				href, ok := links[ts.Name]
				if !ok {
					t.Fatalf("no link to %q on the index", ts.Name)
				}
				ref, err := url.Parse(href)
				if err != nil {
					t.Fatalf("link %q: %v", href, err)
				}
				u := base.ResolveReference(ref)
				if !strings.HasPrefix(u.EscapedPath(), "/targets/") || strings.Count(u.EscapedPath(), "/") != 2 || u.RawQuery != "" || u.Fragment != "" {
					t.Fatalf("link %q resolves to %s, not below /targets/", href, u)
				}
				resp, body := get(t, u.String())
				if resp.StatusCode != 200 {
					t.Fatalf("GET %s = %d: %s", u, resp.StatusCode, body)
				}
				title := regexp.MustCompile(`<title>(.*?) · imagebump</title>`).FindStringSubmatch(body)
				if title == nil || html.UnescapeString(title[1]) != ts.Name {
					t.Errorf("GET %s: title %q, want the page of %q", u, title, ts.Name)
				}
				checkMarkup(t, body)
			})
		}
		checkMarkup(t, index)
	}
}

// TestStatusIndex checks what the index shows of each target: details
// inline up to inlineTargets targets, rows only past it, failing targets
// first.
func TestStatusIndex(t *testing.T) {
	for _, tc := range []struct {
		targets int
		inline  bool
	}{{1, true}, {inlineTargets, true}, {inlineTargets + 1, false}, {200, false}} {
		t.Run(fmt.Sprint(tc.targets), func(t *testing.T) {
			st := fleetStatus(tc.targets)
			var buf bytes.Buffer
			if err := renderIndex(&buf, st); err != nil {
				t.Fatal(err)
			}
			page := buf.String()
			if got := strings.Count(page, `<section class="target"`); tc.inline && got != tc.targets || !tc.inline && got != 0 {
				t.Errorf("%d targets' details inline, want them all: %v", got, tc.inline)
			}
			rows := regexp.MustCompile(`<tr( class="failing")? id="summary-([^"]+)">`).FindAllStringSubmatch(page, -1)
			var got, want []string
			for _, r := range rows {
				got = append(got, r[2]+r[1])
			}
			for _, failing := range []bool{true, false} {
				for _, ts := range st.Targets {
					if (ts.FailingSince != nil) == failing {
						w := ts.Name
						if failing {
							w += ` class="failing"`
						}
						want = append(want, w)
					}
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("summary rows (-want +got):\n%s", diff)
			}
		})
	}
	// The row of a target failing for 12 minutes, whose last cycle
	// failed: its result, how long, its error.
	st := fleetStatus(inlineTargets + 1)
	v := newIndexView(st)
	got := v.Summaries[0]
	want := targetSummary{
		Name: "cluster-000", Href: "targets/cluster-000", Last: &st.Targets[0].Cycles[0],
		NextRun: st.Targets[0].NextRun, NextReason: ReasonRetry, LastSuccess: st.Targets[0].LastSuccess,
		FailingSince: st.Targets[0].FailingSince, ConsecutiveFailures: 3,
		Problems:     1,
		FirstProblem: "fetching https://github.com/acme/fleet-000.git: read tcp 10.0.3.17:51234->140.82.121.3:443: i/o tim…",
		PolicyCount:  40, FailedPolicies: 2, HeldPolicies: 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cluster-000's row (-want +got):\n%s", diff)
	}
	if v.Failing != 4 || v.Running != 1 || v.Inline {
		t.Errorf("failing %d, running %d, inline %v; want 4, 1, false", v.Failing, v.Running, v.Inline)
	}
	var buf bytes.Buffer
	if err := renderIndex(&buf, st); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"11 targets, <span class=\"error\">4 failing</span> (listed first)", "<span class=\"error\" title=\"since 2026-12-01 22:48:00 UTC\">12m00s</span>, 3 cycles",
		`<span class="result error">error</span> <span title="2026-12-01 22:58:00 UTC">2m00s ago</span>`, "40, <span class=\"error\">2 failed</span>, <span class=\"held\">1 held</span>"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("the index lacks %s", s)
		}
	}
}

// TestStatusAPITarget checks /api/v1/status?target=NAME: the document
// with that one target, or 404.
func TestStatusAPITarget(t *testing.T) {
	s := newTestServer(t)
	for _, tc := range []struct {
		query   string
		code    int
		targets []string
	}{
		{"", 200, []string{config.DefaultTargetName}},
		{"?target=" + config.DefaultTargetName, 200, []string{config.DefaultTargetName}},
		{"?target=nope", 404, nil},
		{"?target=", 404, nil},
		{"?target=%3Cscript%3E", 404, nil},
	} {
		t.Run(tc.query, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/status"+tc.query, nil))
			if rec.Code != tc.code {
				t.Fatalf("GET %s = %d, want %d: %s", tc.query, rec.Code, tc.code, rec.Body)
			}
			if tc.code != 200 {
				if ct := rec.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" || !strings.HasPrefix(rec.Body.String(), "no target ") {
					t.Errorf("%s %q", ct, rec.Body)
				}
				return
			}
			var st Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ts := range st.Targets {
				got = append(got, ts.Name)
			}
			if diff := cmp.Diff(tc.targets, got); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatusPageHeaders checks what GET / answers: HTML, and a
// Content-Security-Policy that forbids scripts and allows the page's one
// stylesheet by its hash, which must be the hash of the <style> the page
// holds; a target's page, and its 404, have the same policy.
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
	for path, code := range map[string]int{"/nope": http.StatusNotFound, "/index.html": http.StatusNotFound,
		"/targets/" + config.DefaultTargetName: http.StatusOK, "/targets/nope": http.StatusNotFound} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != code {
			t.Errorf("GET %s = %d, want %d", path, rec.Code, code)
		}
		if strings.HasPrefix(path, "/targets/") && rec.Header().Get("Content-Security-Policy") != csp {
			t.Errorf("GET %s: Content-Security-Policy %q, want the page's", path, rec.Header().Get("Content-Security-Policy"))
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
	if err := renderIndex(&buf, st); err != nil {
		t.Fatal(err)
	}
	if want := "due since 2026-12-01 22:57:00 UTC (3m00s ago) (schedule): waiting for a free slot (--concurrency)"; !strings.Contains(buf.String(), want) {
		t.Errorf("page lacks %q", want)
	}
	soon := st.Now.Add(4 * time.Minute)
	st.Targets[0].NextRun = &soon
	buf.Reset()
	if err := renderIndex(&buf, st); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "waiting for a free slot") {
		t.Error("a cycle planned in 4 minutes is shown waiting for a slot")
	}
}

// TestTargetPageSaysAnErrorOnce: a target failing alike cycle after
// cycle showed its error (hundreds of characters) in every row of the
// cycles table as well as under the last cycle's problems; a row now
// points at where the same error is shown, and a new one shows in full.
func TestTargetPageSaysAnErrorOnce(t *testing.T) {
	same := "cloning https://git.example/fleet.git: credentials refused"
	other := "pushing https://git.example/fleet.git: protected branch"
	now := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	var cycles []CycleStatus
	for i, e := range []string{same, same, same, other, other, ""} {
		cycles = append(cycles, CycleStatus{Started: now.Add(-time.Duration(i) * time.Minute), Reason: ReasonSchedule, Result: ResultError, Error: e})
	}
	cycles[5].Result = ResultSuccess
	ts := TargetStatus{Name: "prod", Cycles: cycles}
	var b strings.Builder
	if err := renderTarget(&b, Status{Now: now, Targets: []TargetStatus{ts}}, ts); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, same); n != 1 {
		t.Errorf("the repeated error is on the page %d times, want once (under Problems)", n)
	}
	if n := strings.Count(page, other); n != 1 {
		t.Errorf("the older error is on the page %d times, want once (its first row)", n)
	}
	if n := strings.Count(page, "the same error as the cycle above"); n != 3 {
		t.Errorf("%d rows point at the row above, want 3", n)
	}
}

// TestTargetPageNoPolicyAsked: a target whose markers name no policy it
// applies (a policies entry mistyped) showed "No scan yet." after many
// scans, and "1 markers".
func TestTargetPageNoPolicyAsked(t *testing.T) {
	now := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	ts := TargetStatus{Name: "prod", CyclesRun: 3, Markers: 1, Cycles: []CycleStatus{{Started: now, Reason: ReasonSchedule, Result: ResultSuccess}}}
	var b strings.Builder
	if err := renderTarget(&b, Status{Now: now, Targets: []TargetStatus{ts}}, ts); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"1 marker at the last scan", "none of its markers names a policy this target applies"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "No scan yet") {
		t.Error(`the page says "No scan yet" after three cycles`)
	}
}
