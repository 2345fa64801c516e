// Package testgitea starts a real Gitea server on loopback for tests, with
// an admin user and an access token, and offers the repository, branch and
// pull request chores the tests need.
//
// The binary is the one scripts/build-gitea.sh builds (Gitea is not in
// Debian): $IMAGEBUMP_GITEA, or gitea-1.26.0/gitea in
// ${IMAGEBUMP_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/imagebump-tools}. Its
// source folder next to it is STATIC_ROOT_PATH. When the binary is missing
// the test fails if CI=true and is skipped otherwise.
//
// One server runs per test binary: Start starts it on first use and later
// calls share it, since it takes a few seconds to come up. Call Main from
// TestMain so that it is stopped when the tests end; the server also dies
// with the test process. It runs with sqlite, OFFLINE_MODE and INSTALL_LOCK
// on 127.0.0.1 and a free port, with its app.ini, work path, data and
// repositories in a temporary folder removed on Stop.
package testgitea

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imagebump/imagebump/internal/testkit/ci"
)

// Version is the Gitea version the tests are written against.
const Version = "1.26.0"

// The admin account Start creates.
const (
	AdminUser     = "imagebump"
	AdminPassword = "imagebump-Test-1"
	adminEmail    = "imagebump@example.invalid"
)

// startTimeout bounds how long Start waits for the server to answer.
const startTimeout = 60 * time.Second

// Server is a running Gitea.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:PORT, without a
	// trailing slash; the API is under URL/api/v1.
	URL string
	// AdminUser and AdminPassword are the site administrator's account.
	AdminUser, AdminPassword string
	// Token is an access token of AdminUser with every scope.
	Token string

	bin, dir, config string
	cmd              *exec.Cmd
	exited           chan struct{}
	client           *http.Client
	stopOnce         sync.Once
}

var (
	mu       sync.Mutex
	shared   *Server
	startErr error
)

// Binary returns the path of the Gitea binary the tests use, whether or
// not it exists.
func Binary() string {
	if p := os.Getenv("IMAGEBUMP_GITEA"); p != "" {
		return p
	}
	tools := os.Getenv("IMAGEBUMP_TOOLS")
	if tools == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		tools = filepath.Join(cache, "imagebump-tools")
	}
	return filepath.Join(tools, "gitea-"+Version, "gitea")
}

// Start returns the shared Gitea server, starting it on first use. When the
// binary is missing, the test fails if CI=true and is skipped otherwise;
// when it does not start, the test fails.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		ci.Missing(t, fmt.Sprintf("testgitea: no Gitea binary at %s; build it with scripts/build-gitea.sh or set IMAGEBUMP_GITEA", bin))
	}
	mu.Lock()
	defer mu.Unlock()
	if shared == nil && startErr == nil {
		shared, startErr = start(bin)
	}
	if startErr != nil {
		t.Fatalf("testgitea: %v", startErr)
	}
	return shared
}

// Main runs the tests and then stops the shared server, if one started. Use
// it as: func TestMain(m *testing.M) { os.Exit(testgitea.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if shared != nil {
		shared.Stop()
		shared = nil
	}
	return code
}

// start brings a new server up, retrying with another port if the one
// picked was taken meanwhile.
func start(bin string) (*Server, error) {
	var err error
	for range 3 {
		var s *Server
		s, err = startOnce(bin)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errPortTaken) {
			return nil, err
		}
	}
	return nil, err
}

var errPortTaken = errors.New("port taken")

func startOnce(bin string) (s *Server, err error) {
	dir, err := os.MkdirTemp("", "testgitea-")
	if err != nil {
		return nil, err
	}
	s = &Server{
		AdminUser:     AdminUser,
		AdminPassword: AdminPassword,
		bin:           bin,
		dir:           dir,
		config:        filepath.Join(dir, "app.ini"),
		exited:        make(chan struct{}),
		client:        &http.Client{Timeout: 30 * time.Second},
	}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s.URL = "http://127.0.0.1:" + strconv.Itoa(port)
	if err := os.WriteFile(s.config, []byte(appINI(dir, filepath.Dir(bin), port)), 0o600); err != nil {
		return nil, err
	}
	if out, err := s.run("migrate"); err != nil {
		return nil, fmt.Errorf("gitea migrate: %w\n%s", err, out)
	}
	if out, err := s.run("admin", "user", "create", "--admin",
		"--username", AdminUser, "--password", AdminPassword, "--email", adminEmail,
		"--must-change-password=false"); err != nil {
		return nil, fmt.Errorf("gitea admin user create: %w\n%s", err, out)
	}
	logFile, err := os.Create(filepath.Join(dir, "gitea-web.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	s.cmd = s.command("web")
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting gitea web: %w", err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitUp(); err != nil {
		return nil, err
	}
	s.Token, err = s.newToken("testgitea-all", "all")
	if err != nil {
		return nil, err
	}
	return s, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// appINI is the server's configuration: everything in dir, nothing that
// reaches the network, no mail, no cron, quiet logs.
func appINI(dir, staticRoot string, port int) string {
	runUser := "root"
	if u, err := user.Current(); err == nil {
		runUser = u.Username
	}
	root := ""
	if os.Getuid() == 0 {
		// Gitea refuses root unless told so (the env var
		// GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT works too).
		root = "I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true\n"
	}
	return fmt.Sprintf(`%sAPP_NAME = testgitea
RUN_USER = %[2]s
RUN_MODE = prod
WORK_PATH = %[3]s

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[4]d
ROOT_URL = http://127.0.0.1:%[4]d/
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
STATIC_ROOT_PATH = %[5]s
APP_DATA_PATH = %[3]s/data
LFS_START_SERVER = false

[database]
DB_TYPE = sqlite3
PATH = %[3]s/data/gitea.db
SQLITE_JOURNAL_MODE = WAL

[repository]
ROOT = %[3]s/repos
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = testgitea-secret-key-not-secret
PASSWORD_COMPLEXITY = off
MIN_PASSWORD_LENGTH = 6

[oauth2]
ENABLED = false

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = false

[log]
MODE = file
LEVEL = warn
ROOT_PATH = %[3]s/log

[cron]
ENABLED = false

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[mailer]
ENABLED = false

[picture]
DISABLE_GRAVATAR = true
ENABLE_FEDERATED_AVATAR = false

[api]
MAX_RESPONSE_ITEMS = 50
`, root, runUser, dir, port, staticRoot)
}

// command returns gitea with args and the server's config and work path.
func (s *Server) command(args ...string) *exec.Cmd {
	args = append(args, "--config", s.config, "--work-path", s.dir)
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	env := []string{}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "GITEA_") {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT=true", "HOME="+filepath.Join(s.dir, "home"))
	setProcAttr(cmd)
	return cmd
}

// run runs a gitea subcommand to completion and returns its output.
func (s *Server) run(args ...string) (string, error) {
	cmd := s.command(args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// waitUp polls the version endpoint until the server answers.
func (s *Server) waitUp() error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			log := s.logTail()
			if strings.Contains(log, "address already in use") {
				return errPortTaken
			}
			return fmt.Errorf("gitea web exited while starting:\n%s", log)
		default:
		}
		resp, err := s.client.Get(s.URL + "/api/v1/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("gitea did not answer on %s within %v:\n%s", s.URL, startTimeout, s.logTail())
}

// logTail returns the end of the server's output and log file.
func (s *Server) logTail() string {
	var b strings.Builder
	for _, p := range []string{filepath.Join(s.dir, "gitea-web.log"), filepath.Join(s.dir, "log", "gitea.log")} {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		b.Write(data)
	}
	return b.String()
}

// Stop kills the server and removes its folder. It is safe to call twice.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.cmd != nil && s.cmd.Process != nil {
			kill(s.cmd)
			select {
			case <-s.exited:
			case <-time.After(10 * time.Second):
			}
		}
		_ = os.RemoveAll(s.dir)
	})
}

// newToken creates an access token of the admin with scopes, by basic auth.
func (s *Server) newToken(name string, scopes ...string) (string, error) {
	var out struct {
		SHA1 string `json:"sha1"`
	}
	body := map[string]any{"name": name, "scopes": scopes}
	status, data, err := s.do(context.Background(), http.MethodPost, "/users/"+AdminUser+"/tokens", body, true)
	if err != nil {
		return "", err
	}
	if status != http.StatusCreated {
		return "", fmt.Errorf("creating token %s: HTTP %d: %s", name, status, data)
	}
	if err := json.Unmarshal(data, &out); err != nil || out.SHA1 == "" {
		return "", fmt.Errorf("creating token %s: unexpected answer %s", name, data)
	}
	return out.SHA1, nil
}

var tokenSeq struct {
	sync.Mutex
	n int
}

// CreateToken returns a new access token of the admin limited to scopes,
// such as "read:repository" or "write:repository", "write:issue".
func (s *Server) CreateToken(t testing.TB, scopes ...string) string {
	t.Helper()
	tokenSeq.Lock()
	tokenSeq.n++
	name := fmt.Sprintf("testgitea-%d", tokenSeq.n)
	tokenSeq.Unlock()
	tok, err := s.newToken(name, scopes...)
	if err != nil {
		t.Fatalf("testgitea: %v", err)
	}
	return tok
}

// do sends an API request (path relative to /api/v1) with the admin's token
// or, with basic set, the admin's password, and returns the status and
// body.
func (s *Server) do(ctx context.Context, method, path string, body any, basic bool) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+"/api/v1"+path, r)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if basic {
		req.SetBasicAuth(s.AdminUser, s.AdminPassword)
	} else {
		req.Header.Set("Authorization", "token "+s.Token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// API sends an API request as the admin (path relative to /api/v1, body
// marshalled to JSON when not nil), fails the test unless the status is
// want, and decodes the answer into out when not nil.
func (s *Server) API(t testing.TB, method, path string, body any, want int, out any) {
	t.Helper()
	status, data, err := s.do(context.Background(), method, path, body, false)
	if err != nil {
		t.Fatalf("testgitea: %s %s: %v", method, path, err)
	}
	if status != want {
		t.Fatalf("testgitea: %s %s: got HTTP %d, want %d: %s", method, path, status, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("testgitea: %s %s: decoding %s: %v", method, path, data, err)
		}
	}
}

// repoSeq makes repository names unique on the shared server, which outlives
// one run of a test (go test -count=N runs it again in the same process).
var repoSeq atomic.Int64

// CreateRepo creates a repository of the admin whose branch main holds
// files (slash-separated path to content; a README when files is empty),
// and returns its owner, name and HTTP clone URL (without credentials). The
// name gets a "-N" suffix, unique in the process.
func (s *Server) CreateRepo(t testing.TB, name string, files map[string]string) (owner, repo, cloneURL string) {
	t.Helper()
	name = fmt.Sprintf("%s-%d", name, repoSeq.Add(1))
	var r struct {
		Name     string `json:"name"`
		CloneURL string `json:"clone_url"`
		Owner    struct {
			Login string `json:"login"`
		} `json:"owner"`
	}
	// An empty repository takes its first commit from the file API, which
	// is one push instead of two.
	s.API(t, http.MethodPost, "/user/repos", map[string]any{
		"name":           name,
		"default_branch": "main",
	}, http.StatusCreated, &r)
	if len(files) == 0 {
		files = map[string]string{"README.md": "# " + name + "\n"}
	}
	s.PushBranch(t, r.Owner.Login, r.Name, "main", "main", files)
	return r.Owner.Login, r.Name, r.CloneURL
}

// PushBranch points branch at a new commit, made on top of base, that
// writes files (created or replaced). A branch that exists is
// force-pushed, as imagebump does to its own branch; with branch equal to
// base the commit simply goes on base.
func (s *Server) PushBranch(t testing.TB, owner, repo, base, branch string, files map[string]string) {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	ops := make([]map[string]string, 0, len(names))
	for _, n := range names {
		ops = append(ops, map[string]string{
			"operation": "upload",
			"path":      n,
			"content":   base64.StdEncoding.EncodeToString([]byte(files[n])),
		})
	}
	body := map[string]any{
		"branch":  base,
		"message": "testgitea: update " + strings.Join(names, ", "),
		"files":   ops,
	}
	if branch != base {
		body["new_branch"] = branch
		body["force_push"] = true
	}
	s.API(t, http.MethodPost, "/repos/"+url.PathEscape(owner)+"/"+url.PathEscape(repo)+"/contents", body, http.StatusCreated, nil)
}

// PullRequest is a pull request as the Gitea API shows it, decoded here
// without the SDK so that tests check the adapter against an independent
// reading.
type PullRequest struct {
	Number int    `json:"number"`
	State  string `json:"state"` // open or closed
	Merged bool   `json:"merged"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	Head   struct {
		Ref string `json:"ref"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
}

// PullRequests returns every pull request of the repository, newest first.
func (s *Server) PullRequests(t testing.TB, owner, repo string) []PullRequest {
	t.Helper()
	var all []PullRequest
	for page := 1; ; page++ {
		var prs []PullRequest
		s.API(t, http.MethodGet, fmt.Sprintf("/repos/%s/%s/pulls?state=all&limit=50&page=%d", url.PathEscape(owner), url.PathEscape(repo), page), nil, http.StatusOK, &prs)
		all = append(all, prs...)
		if len(prs) < 50 {
			return all
		}
	}
}

// MergePR merges pull request number with a merge commit. Gitea checks
// mergeability in the background after a push, so a merge refused as not
// ready yet is retried for a while.
func (s *Server) MergePR(t testing.TB, owner, repo string, number int) {
	t.Helper()
	path := fmt.Sprintf("/repos/%s/%s/pulls/%d/merge", url.PathEscape(owner), url.PathEscape(repo), number)
	deadline := time.Now().Add(20 * time.Second)
	for {
		status, data, err := s.do(context.Background(), http.MethodPost, path, map[string]any{"Do": "merge"}, false)
		if err != nil {
			t.Fatalf("testgitea: merging #%d: %v", number, err)
		}
		if status == http.StatusOK {
			return
		}
		if time.Now().After(deadline) || (status != http.StatusMethodNotAllowed && status != http.StatusConflict) {
			t.Fatalf("testgitea: merging #%d: HTTP %d: %s", number, status, data)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ClosePR closes pull request number without merging it.
func (s *Server) ClosePR(t testing.TB, owner, repo string, number int) {
	t.Helper()
	s.API(t, http.MethodPatch, fmt.Sprintf("/repos/%s/%s/pulls/%d", url.PathEscape(owner), url.PathEscape(repo), number),
		map[string]any{"state": "closed"}, http.StatusCreated, nil)
}

// Comments returns the bodies of the comments on pull request (or issue)
// number, oldest first.
func (s *Server) Comments(t testing.TB, owner, repo string, number int) []string {
	t.Helper()
	var comments []struct {
		Body string `json:"body"`
	}
	s.API(t, http.MethodGet, fmt.Sprintf("/repos/%s/%s/issues/%d/comments", url.PathEscape(owner), url.PathEscape(repo), number), nil, http.StatusOK, &comments)
	var out []string
	for _, c := range comments {
		out = append(out, c.Body)
	}
	return out
}

// RemoveLabel removes the label called name (ignoring case) from pull
// request (or issue) number, as a person would in the web interface. It
// fails the test when the pull request does not have it.
func (s *Server) RemoveLabel(t testing.TB, owner, repo string, number int, name string) {
	t.Helper()
	path := fmt.Sprintf("/repos/%s/%s/issues/%d/labels", url.PathEscape(owner), url.PathEscape(repo), number)
	var labels []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	s.API(t, http.MethodGet, path, nil, http.StatusOK, &labels)
	for _, l := range labels {
		if strings.EqualFold(l.Name, name) {
			s.API(t, http.MethodDelete, fmt.Sprintf("%s/%d", path, l.ID), nil, http.StatusNoContent, nil)
			return
		}
	}
	t.Fatalf("testgitea: pull request #%d has no label %q", number, name)
}
