package testgitea

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestServer drives the helpers against the real Gitea: a repository with
// files, a branch force-pushed twice, pull requests opened, commented on,
// labelled and unlabelled, merged and closed, and a token limited to
// reading.
func TestServer(t *testing.T) {
	begin := time.Now()
	s := Start(t)
	t.Logf("gitea %s up in %v", s.URL, time.Since(begin).Round(time.Millisecond))
	if again := Start(t); again != s {
		t.Fatal("a second Start made another server; want the shared one")
	}

	owner, repo, cloneURL := s.CreateRepo(t, "helpers", map[string]string{"app.yaml": "image: a:1\n"})
	if got, want := owner+"/"+repo, AdminUser+"/helpers-"; !strings.HasPrefix(got, want) {
		t.Errorf("CreateRepo: got %s, want %sN", got, want)
	}
	if !strings.HasPrefix(cloneURL, s.URL+"/") || strings.Contains(cloneURL, "@") {
		t.Errorf("clone URL %q: want a URL under %s without credentials", cloneURL, s.URL)
	}
	var file struct {
		Content string `json:"content"`
	}
	s.API(t, http.MethodGet, "/repos/"+owner+"/"+repo+"/contents/app.yaml?ref=main", nil, http.StatusOK, &file)
	if file.Content == "" {
		t.Error("app.yaml missing on main")
	}

	if git, err := exec.LookPath("git"); err == nil {
		out, err := exec.Command(git, "ls-remote", cloneURL, "refs/heads/main").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "refs/heads/main") {
			t.Errorf("git ls-remote %s: %v: %s", cloneURL, err, out)
		}
	}

	s.PushBranch(t, owner, repo, "main", "bump", map[string]string{"app.yaml": "image: a:2\n"})
	var pr struct {
		Number int `json:"number"`
	}
	open := func() int {
		t.Helper()
		s.API(t, http.MethodPost, "/repos/"+owner+"/"+repo+"/pulls", map[string]string{"head": "bump", "base": "main", "title": "Bump a"}, http.StatusCreated, &pr)
		return pr.Number
	}
	first := open()
	// A second pull request for the same branches is refused with 409.
	s.API(t, http.MethodPost, "/repos/"+owner+"/"+repo+"/pulls", map[string]string{"head": "bump", "base": "main", "title": "again"}, http.StatusConflict, nil)
	s.MergePR(t, owner, repo, first)

	s.PushBranch(t, owner, repo, "main", "bump", map[string]string{"app.yaml": "image: a:3\n"})
	second := open()
	s.API(t, http.MethodPost, fmt.Sprintf("/repos/%s/%s/issues/%d/comments", owner, repo, second), map[string]string{"body": "stale"}, http.StatusCreated, nil)
	if diff := cmp.Diff([]string{"stale"}, s.Comments(t, owner, repo, second)); diff != "" {
		t.Errorf("Comments (-want +got):\n%s", diff)
	}
	var label struct {
		ID int64 `json:"id"`
	}
	s.API(t, http.MethodPost, "/repos/"+owner+"/"+repo+"/labels", map[string]string{"name": "deps", "color": "#ededed"}, http.StatusCreated, &label)
	s.API(t, http.MethodPost, fmt.Sprintf("/repos/%s/%s/issues/%d/labels", owner, repo, second), map[string]any{"labels": []int64{label.ID}}, http.StatusOK, nil)
	s.RemoveLabel(t, owner, repo, second, "DEPS")
	if got := s.PullRequests(t, owner, repo)[0].Labels; len(got) != 0 {
		t.Errorf("labels after RemoveLabel: %v, want none", got)
	}
	s.ClosePR(t, owner, repo, second)

	type row struct {
		Number int
		State  string
		Merged bool
		Head   string
	}
	var got []row
	for _, p := range s.PullRequests(t, owner, repo) {
		got = append(got, row{p.Number, p.State, p.Merged, p.Head.Ref})
	}
	want := []row{{second, "closed", false, "bump"}, {first, "closed", true, "bump"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pull requests (-want +got):\n%s", diff)
	}

	ro := s.CreateToken(t, "read:repository")
	status, _, err := (&Server{URL: s.URL, Token: ro, client: s.client}).do(context.Background(), http.MethodPatch,
		"/repos/"+owner+"/"+repo+"/pulls/1", map[string]string{"title": "x"}, false)
	if err != nil || status != http.StatusForbidden {
		t.Errorf("editing with a read-only token: got HTTP %d, %v; want 403", status, err)
	}
}

func TestBinaryFromEnv(t *testing.T) {
	t.Setenv("IMAGEBUMP_GITEA", "/opt/gitea/bin/gitea")
	if got := Binary(); got != "/opt/gitea/bin/gitea" {
		t.Errorf("Binary() = %q, want the IMAGEBUMP_GITEA path", got)
	}
	t.Setenv("IMAGEBUMP_GITEA", "")
	t.Setenv("IMAGEBUMP_TOOLS", "/tools")
	if got, want := Binary(), "/tools/gitea-"+Version+"/gitea"; got != want {
		t.Errorf("Binary() = %q, want %q", got, want)
	}
}
