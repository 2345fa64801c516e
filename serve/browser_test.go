package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/imagebump/imagebump/internal/testkit/ci"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
	"github.com/imagebump/imagebump/internal/testkit/testgitea"
)

// TestMain stops the shared Gitea server of testgitea, if a test started
// one.
func TestMain(m *testing.M) { os.Exit(testgitea.Main(m)) }

// requireChromium returns the path of Debian's chromium, which
// scripts/test.sh installs. Without it the test is skipped, or fails under
// CI=true.
func requireChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	ci.Missing(t, "no chromium on PATH: install Debian's chromium package (scripts/test.sh does)")
	return ""
}

// browser starts a headless chromium of its own (a fresh profile, no
// network of its own, no sandbox: tests run as root in a container) and
// returns its context; the test's cleanup stops it.
func browser(t *testing.T, exe string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
		cancelAlloc()
	})
	return ctx
}

// document returns the page's DOM, read through the DOM domain of the
// DevTools protocol: no JavaScript runs, in the page or for the test.
func document(ctx context.Context) (*cdp.Node, error) {
	depth := int64(-1)
	return chromedp.Run(ctx, func(ctx context.Context, t *chromedp.Target) (*cdp.Node, error) {
		res, err := cdp.Call(ctx, t, dom.GetDocument, dom.GetDocumentParams{Depth: &depth})
		if err != nil {
			return nil, err
		}
		return res.Root, nil
	})
}

// domText is the text of the elements under n, each text node on a line,
// leaving out <head> (the title and the stylesheet).
func domText(n *cdp.Node) string {
	var b strings.Builder
	var walk func(n *cdp.Node)
	walk = func(n *cdp.Node) {
		if n.NodeName == "HEAD" {
			return
		}
		if n.NodeType == 3 {
			b.WriteString(n.NodeValue)
			b.WriteByte('\n')
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// findByID returns the element with the id under n.
func findByID(n *cdp.Node, id string) *cdp.Node {
	if attr(n, "id") == id {
		return n
	}
	for _, c := range n.Children {
		if f := findByID(c, id); f != nil {
			return f
		}
	}
	return nil
}

// elements returns the elements named name (upper case: A, SCRIPT) under n.
func elements(n *cdp.Node, name string) []*cdp.Node {
	var out []*cdp.Node
	if n.NodeName == name {
		out = append(out, n)
	}
	for _, c := range n.Children {
		out = append(out, elements(c, name)...)
	}
	return out
}

func attr(n *cdp.Node, name string) string {
	for i := 0; i+1 < len(n.Attributes); i += 2 {
		if n.Attributes[i] == name {
			return n.Attributes[i+1]
		}
	}
	return ""
}

// follow clicks the link that find picks on the page loaded in ctx, as a
// user does (a mouse click where chromium laid the link out: no
// JavaScript), waits for the page it leads to, and returns its HTTP answer
// and its DOM. The link is named by its backend node id: chromedp reads
// the document again on its own when it changes, which makes the node ids
// document read before stale, but not the backend ones.
func follow(ctx context.Context, find func(root *cdp.Node) *cdp.Node) (*network.Response, *cdp.Node, error) {
	root, err := document(ctx)
	if err != nil {
		return nil, nil, err
	}
	a := find(root)
	if a == nil {
		return nil, nil, errors.New("no such link")
	}
	click := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		id := a.BackendNodeID
		if _, err := cdp.Call(ctx, t, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: id}); err != nil {
			return err
		}
		res, err := cdp.Call(ctx, t, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: id})
		if err != nil {
			return err
		}
		if len(res.Quads) == 0 || len(res.Quads[0]) != 8 {
			return errors.New("the link is not laid out")
		}
		var x, y float64
		for i, v := range res.Quads[0] {
			if i%2 == 0 {
				x += v / 4
			} else {
				y += v / 4
			}
		}
		_, err = chromedp.MouseClickXY(x, y)(ctx, t)
		return err
	})
	resp, err := chromedp.RunResponse(ctx, click)
	if err != nil {
		return nil, nil, fmt.Errorf("following %q: %w", attr(a, "href"), err)
	}
	root, err = document(ctx)
	return resp, root, err
}

// summaryLink returns the link of the target's row on the index.
func summaryLink(root *cdp.Node, name string) *cdp.Node {
	row := findByID(root, "summary-"+name)
	if row == nil {
		return nil
	}
	if as := elements(row, "A"); len(as) > 0 {
		return as[0]
	}
	return nil
}

// linkTo returns a finder, for follow, of the link of the target's row.
func linkTo(name string) func(*cdp.Node) *cdp.Node {
	return func(root *cdp.Node) *cdp.Node { return summaryLink(root, name) }
}

// TestStatusPageInBrowser runs serve as shard 0 of 2 over three targets
// (one on Gitea with a pull request, one on a git HTTP server with a
// policy whose repository does not exist, one of the other shard), lets
// their cycles and a webhook's run, and opens the status page in
// chromium: with JavaScript on and off, the page shows each target with
// its cycles, commit and pull request link, each policy with its latest
// tag and why, the held policy, the problems, the next cycle, the shard,
// the webhook; no secret; no script; and a summary row per target whose
// link, clicked, opens the target's own page with its details. The
// screenshots of the index and of prod's page are kept as test artefacts
// (go test -artifacts), and written to docs/images with -update.
func TestStatusPageInBrowser(t *testing.T) {
	exe := requireChromium(t)
	gt := testgitea.Start(t)
	reg := memRegistry(t)
	reg.Push(t, "acme/web", "1.0.0", "1.1.0", "1.2.0-rc.1", "latest", "sha256-6d4a7b1c8e9f.sig")
	reg.Push(t, "acme/api", "2.0.0", "2.1.0")
	reg.Push(t, "acme/worker", "main-20261120", "main-20261128", "feature-login")

	dir := t.TempDir()
	const hookSecret = "hook-secret-5e1f0a9c7b"
	writeTestFile(t, filepath.Join(dir, "gitea-token"), gt.Token+"\n")
	writeTestFile(t, filepath.Join(dir, "hook-secret"), hookSecret+"\n")
	marker := func(policy, ref string) string {
		return "spec:\n  image: " + ref + " # {\"$imagepolicy\": \"" + policy + "\"}\n"
	}
	_, _, prodURL := gt.CreateRepo(t, "fleet", map[string]string{
		"clusters/prod/web.yaml":    marker("apps:web", "ghcr.io/acme/web:1.0.0"),
		"clusters/prod/api.yaml":    marker("apps:api", "ghcr.io/acme/api:2.0.0"),
		"clusters/prod/worker.yaml": marker("apps:worker", "ghcr.io/acme/worker:main-20261120"),
	})
	stagingBare := testgit.NewBare(t, map[string]string{
		"clusters/staging/web.yaml":  marker("apps:web", "ghcr.io/acme/web:1.0.0"),
		"clusters/staging/beta.yaml": marker("apps:beta", "ghcr.io/acme/beta:0.1.0"),
	})
	staging := testgit.StartHTTP(t, stagingBare, true)
	cfgFile := filepath.Join(dir, "imagebump.yaml")
	writeTestFile(t, cfgFile, fmt.Sprintf(`registries: [{host: ghcr.io, insecure: true}]
images:
  - {name: apps:web, repository: ghcr.io/acme/web, policy: {semver: ">=1.0.0"}}
  - {name: apps:api, repository: ghcr.io/acme/api, policy: {semver: ">=2.0.0"}, hold: {reason: "incident 42: api rollout paused"}}
  - name: apps:worker
    repository: ghcr.io/acme/worker
    filterTags: {pattern: '^main-(?P<ts>[0-9]+)$', extract: '$ts'}
    policy: {numerical: asc}
  - {name: apps:beta, repository: ghcr.io/acme/beta, policy: {semver: ">=0.1.0"}}
targets:
  - name: prod
    git: {url: %q, branch: main, paths: [clusters/prod], auth: {tokenFile: gitea-token}}
    push:
      branch: imagebump/prod
      pullRequest: {provider: gitea, apiURL: %q}
    schedule: 10m
  - name: staging
    git: {url: %q, branch: main, paths: [clusters/staging], auth: %s}
    schedule: "*/15 * * * *"
  - name: eu-west-1
    git: {url: "https://git.example/eu.git", branch: main}
webhooks:
  - {name: registry, secretFile: hook-secret}
`, prodURL, gt.URL, staging.URL, gitCreds(t, dir, staging)))
	srv := runServer(t, cfgFile, filepath.Join(dir, "work"), Options{
		MaxJitter:         -1,
		Debounce:          200 * time.Millisecond,
		RetryBackoff:      time.Hour,
		MaxRetryBackoff:   time.Hour,
		Shard:             Shard{Index: 0, Count: 2}, // prod and staging are shard 0, eu-west-1 shard 1 (testdata/shards.txt)
		RegistryTransport: aliasTransport(strings.TrimPrefix(reg.URL, "http://"), "ghcr.io"),
		Logger:            slog.New(slog.NewTextHandler(&testLogWriter{t: t}, nil)),
	})
	// prod runs at start (an interval); staging's cron waits, so a
	// webhook for acme/web runs both.
	waitReal(t, 60*time.Second, func() bool { ts := srv.target(t, "prod"); return ts.CyclesRun >= 1 && ts.RunningSince == nil }, "prod's first cycle")
	body := []byte(`{"repository": "ghcr.io/acme/web", "tag": "1.1.0"}`)
	if code, resp := postHook(t, srv.url, "/hook/registry", bytes.NewReader(body), SignatureHeader, sign(hookSecret, body)); code != http.StatusAccepted {
		t.Fatalf("webhook: %d %s", code, resp)
	}
	waitReal(t, 60*time.Second, func() bool {
		p, s := srv.target(t, "prod"), srv.target(t, "staging")
		return p.CyclesRun >= 2 && s.CyclesRun >= 1 && p.RunningSince == nil && s.RunningSince == nil
	}, "the webhook's cycles")

	st := srv.status(t)
	prod := st.Targets[slices.IndexFunc(st.Targets, func(ts TargetStatus) bool { return ts.Name == "prod" })]
	var pr *PullRequestStatus
	var prodCommit string
	for _, c := range prod.Cycles {
		if c.PullRequest != nil && c.PullRequest.URL != "" {
			pr, prodCommit = c.PullRequest, c.Commit
		}
	}
	if pr == nil {
		t.Fatalf("prod opened no pull request: %+v", prod.Cycles)
	}

	ctx := browser(t, exe)
	check := func(t *testing.T, root *cdp.Node) {
		t.Helper()
		text := domText(root)
		for _, want := range []string{
			"imagebump", "ready", "0 of 2: owns 2 of 3 targets", "eu-west-1", "(shard 1)",
			// prod: its repository, schedule, next cycle, policies and why.
			"prod", strings.TrimSuffix(prodURL, ".git"), "imagebump/prod", "10m", "(schedule)",
			"apps:web", "ghcr.io/acme/web", "1.1.0", "apps:worker", "main-20261128",
			"apps:api", "2.1.0", "held: incident 42: api rollout paused",
			"webhook registry: ghcr.io/acme/web:1.1.0", shortCommit(prodCommit), pr.Provider + " #" + fmt.Sprint(pr.Number), pr.Outcome,
			// staging: the policy whose repository does not exist, as a
			// problem and as the policy's why.
			"staging", "*/15 * * * *", "partial", "apps:beta", "ghcr.io/acme/beta",
			// the webhook.
			"POST /hook/registry", "hmac-sha256", "triggered",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("the page does not show %q", want)
			}
		}
		// Each policy's row: seen, invalid, excluded, filtered, skipped,
		// candidates, as in the JSON twin.
		for _, ts := range st.Targets {
			if a := summaryLink(root, ts.Name); a == nil || attr(a, "href") != "targets/"+ts.Name {
				t.Errorf("no summary row linking to target %s's page", ts.Name)
			}
			sec := findByID(root, "target-"+ts.Name)
			if sec == nil {
				t.Errorf("no section for target %s", ts.Name)
				continue
			}
			rows := elements(sec, "TR")
			for _, p := range ts.Policies {
				want := fmt.Sprintf("%s\n%s\n", p.Name, p.Repository)
				row := slices.IndexFunc(rows, func(r *cdp.Node) bool { return strings.HasPrefix(domText(r), want) })
				if row < 0 {
					t.Errorf("target %s: no row for policy %s", ts.Name, p.Name)
					continue
				}
				got := domText(rows[row])
				if wantNums := fmt.Sprintf("%d\n%d\n%d\n%d\n%d\n%d\n", p.Seen, p.Invalid, p.Excluded, p.Filtered, p.Skipped, p.Candidates); !strings.Contains(got, wantNums) {
					t.Errorf("target %s policy %s: row %q, want the counts %q", ts.Name, p.Name, got, wantNums)
				}
			}
			if len(ts.Cycles) > 0 && ts.Cycles[0].ProblemsTotal > 0 && !strings.Contains(domText(sec), ts.Cycles[0].Problems[0]) {
				t.Errorf("target %s: the last cycle's problem %q is not shown", ts.Name, ts.Cycles[0].Problems[0])
			}
		}
		var hrefs []string
		for _, a := range elements(root, "A") {
			hrefs = append(hrefs, attr(a, "href"))
		}
		if !slices.Contains(hrefs, pr.URL) {
			t.Errorf("no link to the pull request %s among %q", pr.URL, hrefs)
		}
		if n := len(elements(root, "SCRIPT")); n != 0 {
			t.Errorf("%d <script> elements", n)
		}
		all := text + strings.Join(hrefs, "\n")
		for _, secret := range []string{gt.Token, hookSecret, staging.Password} {
			if strings.Contains(all, secret) {
				t.Errorf("a secret is on the page")
			}
		}
	}

	// checkProd checks prod's own page, reached from the index's link.
	checkProd := func(t *testing.T, resp *network.Response, root *cdp.Node) {
		t.Helper()
		if resp.Status != http.StatusOK || resp.URL != srv.url+"/targets/prod" {
			t.Errorf("the link led to %s: %d", resp.URL, resp.Status)
		}
		if findByID(root, "target-prod") == nil || findByID(root, "target-staging") != nil || findByID(root, "webhooks") != nil {
			t.Error("prod's page does not show prod's details alone")
		}
		text := domText(root)
		for _, want := range []string{"prod", "all targets", strings.TrimSuffix(prodURL, ".git"), "apps:web", "1.1.0",
			"held: incident 42: api rollout paused", shortCommit(prodCommit), pr.Provider + " #" + fmt.Sprint(pr.Number)} {
			if !strings.Contains(text, want) {
				t.Errorf("prod's page does not show %q", want)
			}
		}
		if strings.Contains(text, "*/15 * * * *") {
			t.Error("prod's page shows staging's schedule")
		}
		var hrefs []string
		for _, a := range elements(root, "A") {
			hrefs = append(hrefs, attr(a, "href"))
		}
		for _, want := range []string{"../", pr.URL, "../api/v1/status?target=prod"} {
			if !slices.Contains(hrefs, want) {
				t.Errorf("prod's page has no link to %s among %q", want, hrefs)
			}
		}
		if n := len(elements(root, "SCRIPT")); n != 0 {
			t.Errorf("%d <script> elements", n)
		}
	}

	t.Run("JavaScript on", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+"/")); err != nil {
			t.Fatal(err)
		}
		root, err := document(ctx)
		if err != nil {
			t.Fatal(err)
		}
		check(t, root)
		title, err := chromedp.Run(ctx, chromedp.Title())
		if err != nil || title != "imagebump" {
			t.Errorf("title %q (%v)", title, err)
		}
		resp, root, err := follow(ctx, linkTo("prod"))
		if err != nil {
			t.Fatal(err)
		}
		checkProd(t, resp, root)
		if title, err := chromedp.Run(ctx, chromedp.Title()); err != nil || title != "prod · imagebump" {
			t.Errorf("title %q (%v)", title, err)
		}
	})

	t.Run("JavaScript off", func(t *testing.T) {
		tab, cancel := chromedp.NewContext(ctx)
		defer cancel()
		off := func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
			return err
		}
		// A page whose script would change the title shows that scripts
		// are really off in this tab.
		probe := "data:text/html,<title>off</title><script>document.title='on'</script>"
		if err := chromedp.Do(tab, chromedp.Func(off), chromedp.Navigate(probe)); err != nil {
			t.Fatal(err)
		}
		if title, err := chromedp.Run(tab, chromedp.Title()); err != nil || title != "off" {
			t.Fatalf("scripts are not off: title %q (%v)", title, err)
		}
		if err := chromedp.Do(tab, chromedp.Navigate(srv.url+"/")); err != nil {
			t.Fatal(err)
		}
		root, err := document(tab)
		if err != nil {
			t.Fatal(err)
		}
		check(t, root)
		resp, root, err := follow(tab, linkTo("prod"))
		if err != nil {
			t.Fatal(err)
		}
		checkProd(t, resp, root)
	})

	for _, shot := range []struct{ name, path, file string }{
		{"screenshot", "/", "status-page.png"},
		{"screenshot of a target", "/targets/prod", "status-target-page.png"},
	} {
		t.Run(shot.name, func(t *testing.T) { screenshot(t, ctx, srv.url+shot.path, shot.file) })
	}

	// The page and its JSON twin say the same: every target and policy of
	// the JSON is on the page.
	resp, err := http.Get(srv.url + "/api/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var twin Status
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&twin); err != nil {
		t.Fatal(err)
	}
	if len(twin.Targets) != 2 || twin.Shard == nil || len(twin.Webhooks) != 1 {
		t.Errorf("JSON twin: %d targets, shard %+v, %d webhooks", len(twin.Targets), twin.Shard, len(twin.Webhooks))
	}
}

// screenshot takes a screenshot of the whole page at u, 1280 pixels wide,
// keeps it as a test artefact (go test -artifacts) and, with -update,
// writes it to docs/images/file.
func screenshot(t *testing.T, ctx context.Context, u, file string) {
	t.Helper()
	shot, err := chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) ([]byte, error) {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(u)); err != nil {
			return nil, err
		}
		return chromedp.FullScreenshot(100)(ctx, tg)
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() < 900 {
		t.Errorf("screenshot of %v, want 1280 wide and the whole page", b)
	}
	p := filepath.Join(t.ArtifactDir(), file)
	if err := os.WriteFile(p, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", p, len(shot))
	if *update {
		if err := os.WriteFile(filepath.Join("..", "docs", "images", file), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStatusIndexInBrowser opens in chromium, with JavaScript off, the
// index of a large fleet (fleetStatus(200) and targets of hostile names):
// one row per target, failing ones first and marked, no details; then
// clicks the links of a failing target and of the hostile names, each of
// which must open that target's own page.
func TestStatusIndexInBrowser(t *testing.T) {
	exe := requireChromium(t)
	st := hostileFleet(200)
	srv := servePages(t, st)
	ctx := browser(t, exe)
	off := func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	}
	resp, err := chromedp.RunResponse(ctx, chromedp.Func(off), chromedp.Navigate(srv.URL+"/"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusOK {
		t.Fatalf("GET / = %d", resp.Status)
	}
	root, err := document(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tbody := elements(findByID(root, "targets"), "TBODY")
	if len(tbody) != 1 {
		t.Fatalf("%d summary tables", len(tbody))
	}
	rows := elements(tbody[0], "TR")
	if len(rows) != len(st.Targets) {
		t.Errorf("%d summary rows, want %d", len(rows), len(st.Targets))
	}
	failing := 0
	for _, ts := range st.Targets {
		if ts.FailingSince != nil {
			failing++
		}
	}
	for i, r := range rows {
		if got, want := attr(r, "class") == "failing", i < failing; got != want {
			t.Errorf("row %d (%s): failing %v, want %v (failing targets first)", i, attr(r, "id"), got, want)
		}
	}
	if n := len(elements(root, "SECTION")); n != 2 { // the targets' table and the webhooks
		t.Errorf("%d sections, want the summary and the webhooks only", n)
	}
	if findByID(root, "shard") == nil || findByID(root, "webhooks") == nil {
		t.Error("the index lacks the shard or the webhooks")
	}
	if n := len(elements(root, "SCRIPT")); n != 0 {
		t.Errorf("%d <script> elements", n)
	}
	for _, name := range append([]string{"cluster-000"}, hostileNames...) {
		t.Run(name, func(t *testing.T) {
			if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
				t.Fatal(err)
			}
			resp, root, err := follow(ctx, linkTo(name))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != http.StatusOK || !strings.HasPrefix(resp.URL, srv.URL+"/targets/") {
				t.Errorf("the link led to %s: %d", resp.URL, resp.Status)
			}
			sec := findByID(root, "target-"+name)
			if sec == nil {
				t.Fatalf("the page at %s has no details of %q", resp.URL, name)
			}
			if h2 := elements(sec, "H2"); len(h2) == 0 || !strings.HasPrefix(domText(h2[0]), name+" \n") {
				t.Errorf("the details are not headed %q", name)
			}
			if !strings.Contains(domText(sec), "team-0:app-0") {
				t.Error("the target's policies are not shown")
			}
			if n := len(elements(root, "SCRIPT")); n != 0 {
				t.Errorf("%d <script> elements", n)
			}
		})
	}
}
