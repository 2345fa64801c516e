package commands

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/imagebump/imagebump/internal/testkit/hostile"
	"github.com/imagebump/imagebump/internal/testkit/testgit"
	"github.com/imagebump/imagebump/internal/testkit/testregistry"
)

// TestNoSecretLeaks configures every kind of secret imagebump reads, each
// with its own random value, and runs plan, tags, validate, run, run -o
// json and serve (with debug logs, as text and as JSON) through a table of
// failures of registries, Git servers and forges, several of which echo
// the credentials they were sent. It collects every byte imagebump prints
// and writes (standard output and logs, the remote repository's objects
// and refs, what the forge received, every file of the working copies and
// of the temporary folder, serve's HTTP answers) and fails if any secret
// appears there raw, URL-encoded, JSON- or Go-quoted, base64-encoded (alone
// or as user:password) or as a 16-byte piece. Each row also asserts that
// its failure is reported, so that it cannot pass by failing early.
func TestNoSecretLeaks(t *testing.T) {
	env := newLeakEnv(t)
	for i, row := range leakRows(env) {
		t.Run(row.name, func(t *testing.T) {
			env.runRow(t, i, row)
		})
	}
}

// Names of the secret files the config refers to. Rows may replace the
// content of any of them (a wrong password is a secret too).
const (
	secRegAUser   = "registry-a-user"
	secRegAPass   = "registry-a-password"
	secRegBToken  = "registry-b-token"
	secRegBUser   = "registry-b-user"
	secRegBPass   = "registry-b-password"
	secDockerCfg  = "docker-config.json"
	secCrossUser  = "registry-x-user"
	secCrossPass  = "registry-x-password"
	secEchoToken  = "registry-e-token"
	secGitUser    = "git-user"
	secGitPass    = "git-password"
	secGitToken   = "git-token"
	secForgeToken = "forge-token"
	secSignKey    = "signing-key.asc"
	secSignPass   = "signing-passphrase"
	secSSHKey     = "ssh-key"
	secSSHPass    = "ssh-key-passphrase"
	secKnownHosts = "known_hosts"
)

// The repository's path on the Git fronts and the forge, and imagebump's
// branch for pull requests.
const (
	leakOwnerRepo  = "acme/fleet"
	leakPushBranch = "imagebump/main"
)

// leakEnv is the servers every row shares, and the secrets they want.
type leakEnv struct {
	dir    string // configs and secret files: the inputs, not searched
	tmp    string // imagebump's TMPDIR, searched
	output string // --workdir folders, searched

	regA              *testregistry.Server // htpasswd: usernameFile and passwordFile
	regB              *testregistry.Server // token auth: tokenFile
	dockC             *hostile.Server      // basic auth from a Docker config file
	cross             *hostile.Server      // token realm on another host over HTTP
	echo              *echoRegistry        // answers errors that echo the credentials
	bare              string
	initial           string // main's first commit
	gitPW             *testgit.HTTPServer
	gitTok            *testgit.HTTPServer
	frontPW, frontTok *gitFront
	ssh               *testgit.SSHServer
	forge             *fakeGitHub
	refused           string // a host:port where nothing listens
	urlToken          string // a token written into a Git URL

	// files are the secret files' default contents, by name.
	files map[string]string
	// extra are secrets that are not a file's whole content: the lines of
	// the private keys.
	extra map[string]string
}

func newLeakEnv(t *testing.T) *leakEnv {
	t.Helper()
	e := &leakEnv{dir: t.TempDir(), files: map[string]string{}, extra: map[string]string{}}

	// Registries: the real distribution registry with htpasswd and with a
	// token server, and fakes for what real registries do not do.
	e.regA = testregistry.Start(t, testregistry.Options{Htpasswd: true})
	e.regB = testregistry.Start(t, testregistry.Options{Token: true})
	e.regA.Push(t, "acme/a", "1.0.0", "1.2.0")
	e.regB.Push(t, "acme/b", "1.0.0", "1.3.0")
	e.dockC = hostile.Start(t, hostile.Options{Auth: hostile.AuthBasic, ErrorBodySize: 200 << 10})
	e.cross = hostile.Start(t, hostile.Options{Auth: hostile.AuthCrossHostRealm})
	e.echo = startEchoRegistry(t)
	e.refused = hostile.Refused(t)

	// Git: one bare repository behind two authenticated HTTP servers (a
	// password, a token), each behind a front that gives it the owner/repo
	// path forges have and can echo what it is sent, and behind sshd.
	e.bare = testgit.NewBare(t, map[string]string{
		"apps/a.yaml": "tag: 1.0.0 # {\"$imagepolicy\": \"apps:a:tag\"}\n",
		"apps/b.yaml": "tag: 1.0.0 # {\"$imagepolicy\": \"apps:b:tag\"}\n",
		"apps/c.yaml": "tag: 1.0.0 # {\"$imagepolicy\": \"apps:c:tag\"}\n",
	})
	e.initial = testgit.Git(t, e.bare, "rev-parse", "refs/heads/main")
	e.gitPW = testgit.StartHTTP(t, e.bare, true)
	e.gitTok = testgit.StartHTTP(t, e.bare, true)
	e.gitTok.AllowUser("x-access-token")
	e.frontPW = startGitFront(t, e.gitPW.URL)
	e.frontTok = startGitFront(t, e.gitTok.URL)
	e.ssh = testgit.StartSSH(t, e.bare)
	e.forge = startFakeGitHub(t)

	// The secrets, each distinct. Those imagebump's tests choose carry
	// characters that encode differently in URLs, JSON, Go quoting and
	// base64, so that every form is searched for something it changes.
	e.files[secRegAUser] = e.regA.Username
	e.files[secRegAPass] = e.regA.Password
	e.files[secRegBToken] = registryToken(t, e.regB, "acme/b")
	e.files[secDockerCfg] = dockerConfig(e.dockC.Host, e.dockC.Username, e.dockC.Password)
	e.files[secCrossUser] = e.cross.Username
	e.files[secCrossPass] = e.cross.Password
	e.files[secEchoToken] = leakSecret("echo-token")
	e.files[secGitUser] = e.gitPW.Username
	e.files[secGitPass] = e.gitPW.Password
	e.files[secGitToken] = e.gitTok.Password
	e.files[secForgeToken] = leakSecret("forge-token")
	e.files[secSignPass] = leakSecret("sign-pass")
	e.urlToken = leakSecret("url-token")
	e.files[secSignKey] = signingKey(t, e.files[secSignPass])
	e.files[secSSHPass] = e.ssh.KeyPassphrase
	e.files[secSSHKey] = readText(t, e.ssh.EncryptedKeyFile)
	e.files[secKnownHosts] = readText(t, e.ssh.KnownHostsFile)
	for i, l := range keyLines(e.files[secSignKey]) {
		e.extra[fmt.Sprintf("signing key line %d", i)] = l
	}
	for i, l := range keyLines(e.files[secSSHKey]) {
		e.extra[fmt.Sprintf("ssh key line %d", i)] = l
	}

	// imagebump's temporary clones go where the test can search them.
	e.tmp = filepath.Join(e.dir, "tmp")
	e.output = filepath.Join(e.dir, "out")
	for _, d := range []string{e.tmp, e.output} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", e.tmp)
	return e
}

// leakSecret returns a random secret named by prefix, with characters that
// URL, JSON, Go and base64 encodings each change.
func leakSecret(prefix string) string {
	return prefix + "-" + rand.Text() + `+/="<&>%` + rand.Text()[:8]
}

// registryToken asks regB's token server for a pull token for repo, as
// an operator would to fill tokenFile.
func registryToken(t *testing.T, s *testregistry.Server, repo string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.Realm+"?service=imagebump-testregistry&scope=repository:"+repo+":pull", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(s.Username, s.Password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.Token == "" {
		t.Fatalf("token server answered %s: %v", resp.Status, err)
	}
	return tok.Token
}

func dockerConfig(host, user, pass string) string {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	return `{"auths": {"` + host + `": {"auth": "` + auth + `"}}}` + "\n"
}

// signingKey returns an armored OpenPGP private key encrypted with
// passphrase (EdDSA: generating RSA keys is slow).
func signingKey(t *testing.T, passphrase string) string {
	t.Helper()
	e, err := openpgp.NewEntity("imagebump leak test", "", "leak@example.invalid", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.EncryptPrivateKeys([]byte(passphrase), nil); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SerializePrivateWithoutSigning(w, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// keyLines returns the full-length base64 lines of an armored or PEM
// private key but the first, which may encode public parts only.
func keyLines(armored string) []string {
	var out []string
	for _, l := range strings.Split(armored, "\n") {
		if len(l) >= 60 && !strings.ContainsAny(l, " :-") {
			out = append(out, l)
		}
	}
	if len(out) > 1 {
		out = out[1:]
	}
	return out
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Kinds of target a row runs against.
const (
	targetPassword = "password" // HTTP Git with a username and password, commits to main
	targetToken    = "token"    // HTTP Git with a token, pushes a branch and opens a pull request
	targetSSH      = "ssh"      // SSH Git with an encrypted key
)

// The commands a row may run, always with --log-level debug (see runRow
// for the log formats).
const (
	cmdPlan     = "plan"
	cmdTags     = "tags"
	cmdValidate = "validate"
	cmdRun      = "run"
	cmdRunJSON  = "run -o json"
	cmdServe    = "serve"
)

// expect is what a command must do in a row: exit with code and print
// something matching want (stdout and logs; for serve, its status
// document).
type expect struct {
	code int
	want string
}

// leakRow is one failure.
type leakRow struct {
	name   string
	target string
	// files replace secret files' contents.
	files map[string]string
	// repos replace the repositories of the policies apps:a, apps:b and
	// apps:c; auth replaces a registry host's auth mapping (flow YAML).
	repos map[string]string
	auth  map[string]string
	// gitURL replaces the target's Git URL; apiURL the forge's.
	gitURL, apiURL string
	// tags is the policy `imagebump tags` is asked about.
	tags string
	// setup prepares the servers' misbehaviour; its return undoes it.
	setup func(t *testing.T) func()
	// expect lists the commands the row runs.
	expect map[string]expect
	// check asserts more, once the row ran.
	check func(t *testing.T)
}

// fails expects every command in cmds to exit 1 with want in its output;
// serve, which runs on, must show want in its status.
func fails(want string, cmds ...string) map[string]expect {
	m := map[string]expect{cmdValidate: {}}
	for _, c := range cmds {
		if c == cmdServe {
			m[c] = expect{want: want}
			continue
		}
		m[c] = expect{code: ExitFailure, want: want}
	}
	return m
}

// previewFails is fails for a forge failure: plan only previews the pull
// request, so it exits 0 and says it could not check it.
func previewFails(want string, cmds ...string) map[string]expect {
	m := fails(want, cmds...)
	m[cmdPlan] = expect{want: `(?i)pull request: could not be checked: ` + strings.TrimPrefix(want, "(?i)")}
	return m
}

func leakRows(e *leakEnv) []leakRow {
	wrong := func(prefix string) string { return leakSecret("wrong-" + prefix) }
	regCmds := []string{cmdPlan, cmdTags, cmdRun, cmdRunJSON}
	gitCmds := []string{cmdPlan, cmdRun, cmdRunJSON}
	return []leakRow{
		{
			name:   "baseline every secret used",
			target: targetPassword,
			tags:   "apps:b",
			expect: map[string]expect{
				cmdValidate: {},
				cmdTags:     {want: `1\.3\.0`},
				cmdPlan:     {want: `apps/b\.yaml`},
				cmdRun:      {want: `(?i)pushed`},
				cmdRunJSON:  {want: `"pushed": true`},
				cmdServe:    {want: `"pushed": ?true`},
			},
			check: func(t *testing.T) {
				// The commits were signed with the encrypted key.
				if c := testgit.Git(t, e.bare, "cat-file", "--batch-all-objects", "--batch"); !strings.Contains(c, "BEGIN PGP SIGNATURE") {
					t.Errorf("no pushed commit is signed")
				}
			},
		},
		{
			name:   "registry htpasswd wrong password",
			target: targetPassword,
			tags:   "apps:a",
			files:  map[string]string{secRegAPass: wrong("registry-a")},
			expect: fails(`(?i)(apps:a|acme/a).*(401|unauthori|credential)`, regCmds...),
		},
		{
			name:   "registry echoes the Authorization header and password in a huge 403",
			target: targetPassword,
			tags:   "apps:c",
			repos:  map[string]string{"apps:c": e.dockC.Repo(hostile.HugeErrorBody, "c")},
			expect: fails(`(?i)(apps:c|huge-error/c).*(403|denied)`, append(regCmds, cmdServe)...),
		},
		{
			name:   "registry 500 with the token in the body",
			target: targetPassword,
			tags:   "apps:b",
			repos:  map[string]string{"apps:b": e.echo.host + "/e500/b"},
			expect: fails(`(?i)(apps:b|e500/b).*500`, append(regCmds, cmdServe)...),
		},
		{
			name:   "registry 500 with the token across the error body cut",
			target: targetPassword,
			tags:   "apps:b",
			repos:  map[string]string{"apps:b": e.echo.host + "/e500big/b"},
			expect: fails(`(?i)(apps:b|e500big/b).*500`, regCmds...),
		},
		{
			name:   "registry 401 echoing the token",
			target: targetPassword,
			tags:   "apps:b",
			repos:  map[string]string{"apps:b": e.echo.host + "/e401/b"},
			expect: fails(`(?i)(apps:b|e401/b).*(401|unauthori)`, regCmds...),
		},
		{
			name:   "token realm refuses the password",
			target: targetPassword,
			tags:   "apps:b",
			auth:   map[string]string{e.regB.Host: "{usernameFile: " + secRegBUser + ", passwordFile: " + secRegBPass + "}"},
			files:  map[string]string{secRegBUser: e.regB.Username, secRegBPass: wrong("realm")},
			expect: fails(`(?i)(apps:b|acme/b).*(401|unauthori)`, regCmds...),
		},
		{
			name:   "token realm on another host over plain HTTP",
			target: targetPassword,
			tags:   "apps:b",
			repos:  map[string]string{"apps:b": e.cross.Repo(hostile.Healthy, "b")},
			expect: fails(`(?i)(apps:b|healthy/b).*realm`, regCmds...),
			check: func(t *testing.T) {
				for _, h := range e.cross.RealmRequests() {
					if h != "" {
						t.Errorf("the cross-host realm got an Authorization header")
					}
				}
			},
		},
		{
			name:   "git 401 wrong password",
			target: targetPassword,
			files:  map[string]string{secGitPass: wrong("git")},
			expect: fails(`(?i)credentials refused`, gitCmds...),
		},
		{
			name:   "git server echoes the URL and credentials in a 500",
			target: targetPassword,
			setup:  func(*testing.T) func() { return e.frontPW.setMode(frontEcho500) },
			expect: fails(`500`, append(gitCmds, cmdServe)...),
		},
		{
			name:   "git server echoes the credentials in a 401",
			target: targetPassword,
			setup:  func(*testing.T) func() { return e.frontPW.setMode(frontEcho401) },
			expect: fails(`(?i)credentials refused`, gitCmds...),
		},
		{
			name:   "git push rejected by a hook that prints the secrets",
			target: targetPassword,
			setup:  func(t *testing.T) func() { return e.rejectingHook(t) },
			expect: func() map[string]expect {
				m := fails(`(?i)(reject|declined|hook)`, cmdRun, cmdRunJSON, cmdServe)
				m[cmdPlan] = expect{want: `apps/b\.yaml`}
				return m
			}(),
		},
		{
			name:   "git URL with a token as its user name",
			target: targetPassword,
			gitURL: strings.Replace(e.frontPW.url, "http://", "http://"+url.PathEscape(e.urlToken)+"@", 1),
			expect: func() map[string]expect {
				// Refused as config: imagebump takes no credentials from URLs.
				m := map[string]expect{}
				for _, c := range []string{cmdValidate, cmdPlan, cmdRun, cmdRunJSON} {
					m[c] = expect{code: ExitUsage, want: `no credentials from URLs`}
				}
				return m
			}(),
		},
		{
			name:   "wrong signing key passphrase",
			target: targetPassword,
			files:  map[string]string{secSignPass: wrong("sign")},
			expect: func() map[string]expect {
				m := fails(`(?i)passphrase`, cmdRun, cmdRunJSON)
				m[cmdPlan] = expect{want: `apps/b\.yaml`}
				return m
			}(),
		},
		{
			name:   "ssh encrypted key",
			target: targetSSH,
			// Each connection decrypts the key (bcrypt, by design) and a
			// push over SSH takes seconds: plan, which clones, proves the
			// passphrase was read and used.
			expect: map[string]expect{cmdValidate: {}, cmdPlan: {want: `apps/b\.yaml`}},
		},
		{
			name:   "ssh wrong key passphrase",
			target: targetSSH,
			files:  map[string]string{secSSHPass: wrong("ssh")},
			expect: fails(`(?i)passphrase`, gitCmds...),
		},
		{
			name:   "forge pull request opened",
			target: targetToken,
			expect: map[string]expect{
				cmdValidate: {},
				cmdPlan:     {want: `(?i)pull request`},
				cmdRun:      {want: `(?i)pull request`},
				cmdRunJSON:  {want: `"outcome": "opened"`},
				cmdServe:    {want: `(?i)opened`},
			},
			check: func(t *testing.T) {
				created := false
				for _, r := range e.forge.bodies() {
					created = created || strings.HasPrefix(r, "POST /repos/"+leakOwnerRepo+"/pulls\n") && strings.Contains(r, "apps/b.yaml")
				}
				if !created {
					t.Error("the forge received no pull request listing the bumps")
				}
			},
		},
		{
			name:   "git token refused",
			target: targetToken,
			files:  map[string]string{secGitToken: wrong("git-token")},
			expect: fails(`(?i)credentials refused`, gitCmds...),
		},
		{
			name:   "forge 401 with the token in its message",
			target: targetToken,
			setup:  func(*testing.T) func() { return e.forge.setMode(forge401) },
			expect: previewFails(`(?i)github.*(401|invalid or expired)`, cmdRun, cmdRunJSON, cmdServe),
		},
		{
			name:   "forge 403 with the token in its message",
			target: targetToken,
			setup:  func(*testing.T) func() { return e.forge.setMode(forge403) },
			expect: fails(`(?i)github.*(403|not allowed)`, cmdRun, cmdRunJSON),
		},
		{
			name:   "forge 422 with the token in its errors",
			target: targetToken,
			setup:  func(*testing.T) func() { return e.forge.setMode(forge422) },
			expect: fails(`(?i)github.*422`, cmdRun, cmdRunJSON),
		},
		{
			name:   "forge down",
			target: targetToken,
			apiURL: "http://" + e.refused + "/",
			expect: previewFails(`(?i)github.*(refused|connect)`, cmdRun, cmdRunJSON),
		},
	}
}

// runRow runs one row's commands and searches everything they left. The
// first row runs every command with text and with JSON logs; to keep the
// table fast the others run each command once, with the log format
// alternating over commands and rows, so that every row and every command
// meets both formats, and run or run -o json, alternating over rows.
func (e *leakEnv) runRow(t *testing.T, index int, row leakRow) {
	files := map[string]string{}
	for k, v := range e.files {
		files[k] = v
	}
	for k, v := range row.files {
		files[k] = v
	}
	rowDir := filepath.Join(e.dir, "rows", sanitizeName(row.name))
	for name, content := range files {
		writeFile(t, rowDir, name, content+"\n")
	}
	cfg := writeFile(t, rowDir, "imagebump.yaml", e.config(row))

	secrets := append(e.secretSet(files), secretForms("token in the Git URL", e.urlToken)...)
	e.forge.clearRequests()
	if row.setup != nil {
		undo := row.setup(t)
		defer undo()
	}

	var blobs []leakBlob
	// run and run -o json differ only in what they print on standard
	// output: past the first row, a row that lists both runs one of them.
	skip := ""
	_, hasRun := row.expect[cmdRun]
	_, hasRunJSON := row.expect[cmdRunJSON]
	if index > 0 && hasRun && hasRunJSON {
		skip = []string{cmdRunJSON, cmdRun}[index%2]
	}
	cmds := make([]string, 0, len(row.expect))
	for c := range row.expect {
		if c != skip {
			cmds = append(cmds, c)
		}
	}
	sort.Strings(cmds)
	for j, c := range cmds {
		want := row.expect[c]
		formats := []string{"text", "json"}
		if index > 0 {
			formats = formats[(index+j)%2:][:1]
		}
		for _, format := range formats {
			e.resetRemote(t)
			name := c + " (" + format + " logs)"
			work := filepath.Join(e.output, sanitizeName(row.name), sanitizeName(c)+"-"+format)
			var out, errOut string
			var code int
			start := time.Now()
			if c == cmdServe {
				out, errOut, code = e.serve(t, cfg, work, format, &blobs)
			} else {
				args := e.args(c, row, cfg, work, format)
				out, errOut, code = runMain(t, args...)
			}
			t.Logf("%s took %v", name, time.Since(start))
			blobs = append(blobs, leakBlob{name + " stdout", out}, leakBlob{name + " stderr", errOut})
			if code != want.code {
				t.Errorf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", name, code, want.code, out, errOut)
			}
			if want.want != "" {
				re := regexp.MustCompile(want.want)
				text := out + errOut
				if c == cmdServe {
					text = out + errOut + blobsText(blobs, name+" /api/v1/status")
				}
				if !re.MatchString(text) {
					t.Errorf("%s does not report the failure (no match for %q)\nstdout:\n%s\nstderr:\n%s", name, want.want, out, errOut)
				}
			}
			blobs = append(blobs, treeBlobs(t, work)...)
			blobs = append(blobs, treeBlobs(t, e.tmp)...)
		}
	}
	blobs = append(blobs, treeBlobs(t, e.bare)...)
	blobs = append(blobs, leakBlob{"forge requests", strings.Join(e.forge.bodies(), "\n")})
	for _, b := range blobs {
		found := map[string]bool{} // one report per secret and place
		for _, s := range secrets {
			if found[s.name] {
				continue
			}
			if i := strings.Index(b.data, s.form); i >= 0 {
				found[s.name] = true
				t.Errorf("%s appears (%s) in %s: %s", s.name, s.how, b.where, excerpt(b.data, i, len(s.form)))
			}
		}
	}
	if row.check != nil {
		row.check(t)
	}
}

// args returns the command line of a command.
func (e *leakEnv) args(c string, row leakRow, cfg, work, format string) []string {
	var args []string
	switch c {
	case cmdPlan:
		args = []string{"plan"}
	case cmdTags:
		args = []string{"tags", row.tags, "--digest"}
	case cmdValidate:
		args = []string{"validate"}
	case cmdRun:
		args = []string{"run", "--workdir", work}
	case cmdRunJSON:
		args = []string{"run", "--workdir", work, "-o", "json"}
	}
	return append(args, "-c", cfg, "--log-level", "debug", "--log-format", format)
}

// config renders the row's config: every registry with its auth, the
// three policies, the target, signed commits.
func (e *leakEnv) config(row leakRow) string {
	hostAuth := []struct{ host, auth string }{
		{e.regA.Host, "{usernameFile: " + secRegAUser + ", passwordFile: " + secRegAPass + "}"},
		{e.regB.Host, "{tokenFile: " + secRegBToken + "}"},
		{e.dockC.Host, "{dockerConfig: " + secDockerCfg + "}"},
		{e.cross.Host, "{usernameFile: " + secCrossUser + ", passwordFile: " + secCrossPass + "}"},
		{e.echo.host, "{tokenFile: " + secEchoToken + "}"},
	}
	var b strings.Builder
	b.WriteString("registries:\n")
	for _, h := range hostAuth {
		auth := h.auth
		if a, ok := row.auth[h.host]; ok {
			auth = a
		}
		fmt.Fprintf(&b, "  - {host: %q, insecure: true, retries: 0, timeout: 20s, auth: %s}\n", h.host, auth)
	}
	repos := map[string]string{
		"apps:a": e.regA.Repo("acme/a"),
		"apps:b": e.regB.Repo("acme/b"),
		"apps:c": e.dockC.Repo(hostile.Healthy, "c"),
	}
	for k, v := range row.repos {
		repos[k] = v
	}
	b.WriteString("images:\n")
	for _, p := range []string{"apps:a", "apps:b", "apps:c"} {
		fmt.Fprintf(&b, "  - {name: %q, repository: %q, policy: {semver: \">=1.0.0\"}}\n", p, repos[p])
	}
	b.WriteString("commit:\n  author: {name: bot, email: bot@example.invalid}\n")
	b.WriteString("  signingKeyFile: " + secSignKey + "\n  signingPassphraseFile: " + secSignPass + "\n")
	b.WriteString("schedule: 2s\n") // jitter: a tenth of it
	switch row.target {
	case targetPassword:
		u := e.frontPW.url
		if row.gitURL != "" {
			u = row.gitURL
		}
		fmt.Fprintf(&b, "git:\n  url: %q\n  branch: main\n  auth: {usernameFile: %s, passwordFile: %s}\n", u, secGitUser, secGitPass)
	case targetToken:
		api := e.forge.url + "/"
		if row.apiURL != "" {
			api = row.apiURL
		}
		fmt.Fprintf(&b, "git:\n  url: %q\n  branch: main\n  auth: {tokenFile: %s}\n", e.frontTok.url, secGitToken)
		fmt.Fprintf(&b, "push:\n  branch: %s\n  pullRequest: {provider: github, apiURL: %q, tokenFile: %s, labels: [dependencies]}\n", leakPushBranch, api, secForgeToken)
	case targetSSH:
		fmt.Fprintf(&b, "git:\n  url: %q\n  branch: main\n  auth: {sshKeyFile: %s, sshKeyPassphraseFile: %s, knownHostsFile: %s}\n", e.ssh.URL, secSSHKey, secSSHPass, secKnownHosts)
	}
	return b.String()
}

// resetRemote puts the remote back as it was before any row: main at its
// first commit, no other branch, no pull request.
func (e *leakEnv) resetRemote(t *testing.T) {
	t.Helper()
	testgit.Git(t, e.bare, "update-ref", "refs/heads/main", e.initial)
	for _, ref := range strings.Fields(testgit.Git(t, e.bare, "for-each-ref", "--format=%(refname)", "refs/heads/")) {
		if ref != "refs/heads/main" {
			testgit.Git(t, e.bare, "update-ref", "-d", ref)
		}
	}
	e.forge.reset()
}

// rejectingHook installs a pre-receive hook that prints the Git and forge
// secrets and refuses the push. go-git asks for no side band when it is
// given no progress writer, so today the message reaches git
// http-backend's standard error (the test log) and not imagebump; the row
// guards against imagebump ever showing the "remote:" lines unredacted.
func (e *leakEnv) rejectingHook(t *testing.T) func() {
	t.Helper()
	var msg strings.Builder
	for _, name := range []string{secGitPass, secGitToken, secForgeToken} {
		msg.WriteString("denied: " + e.files[name] + "\n")
	}
	msg.WriteString("denied: " + base64.StdEncoding.EncodeToString([]byte(e.gitPW.Username+":"+e.gitPW.Password)) + "\n")
	msgFile := writeFile(t, e.dir, "hook-message", msg.String())
	hook := filepath.Join(e.bare, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ncat '"+msgFile+"' >&2\necho 'rejected by policy' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return func() { _ = os.Remove(hook) }
}

// serve runs `imagebump serve` in-process until its first cycle ended,
// fetches its pages into blobs, and stops it with SIGTERM.
func (e *leakEnv) serve(t *testing.T, cfg, work, format string, blobs *[]leakBlob) (stdout, stderr string, code int) {
	t.Helper()
	addr := freeAddr(t)
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(context.Background(), []string{"serve", "-c", cfg, "--listen", addr, "--workdir", work,
			"--grace", "10s", "--log-level", "debug", "--log-format", format}, &out, &errOut)
	}()
	name := "serve (" + format + " logs)"
	base := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case code := <-done:
			t.Fatalf("%s exited with %d before its first cycle ended\n%s", name, code, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			// Leave the server be: a signal now could reach no handler.
			t.Fatalf("%s: no cycle ended within 60s\n%s", name, errOut.String())
		}
		if st, ok := getStatus(base); ok && len(st.Targets) == 1 && st.Targets[0].CyclesRun > 0 && st.Targets[0].RunningSince == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range []string{"/api/v1/status", "/metrics", "/", "/healthz", "/readyz"} {
		*blobs = append(*blobs, leakBlob{name + " " + p, httpGetText(base + p)})
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not stop within 30s of SIGTERM", name)
	}
	return out.String(), errOut.String(), code
}

type serveStatus struct {
	Targets []struct {
		CyclesRun    int        `json:"cyclesRun"`
		RunningSince *time.Time `json:"runningSince"`
	} `json:"targets"`
}

func getStatus(base string) (serveStatus, bool) {
	var st serveStatus
	resp, err := http.Get(base + "/api/v1/status")
	if err != nil {
		return st, false
	}
	defer resp.Body.Close()
	return st, resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&st) == nil
}

func httpGetText(u string) string {
	resp, err := http.Get(u)
	if err != nil {
		return "GET " + u + ": " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Status + "\n" + string(b)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// leakBlob is bytes imagebump printed or wrote, and where.
type leakBlob struct {
	where string
	data  string
}

func blobsText(blobs []leakBlob, where string) string {
	var b strings.Builder
	for _, x := range blobs {
		if x.where == where {
			b.WriteString(x.data)
		}
	}
	return b.String()
}

// treeBlobs returns every regular file under root, and for every Git
// repository there (a .git folder or a bare repository) its objects
// decompressed and its refs, which raw files would hide.
func treeBlobs(t *testing.T, root string) []leakBlob {
	t.Helper()
	var blobs []leakBlob
	var repos []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || (p == root && strings.HasSuffix(p, ".git"))) {
			repos = append(repos, p)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		blobs = append(blobs, leakBlob{p, string(b)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range repos {
		objects, err := testgit.GitErr(t, r, nil, "--git-dir", r, "cat-file", "--batch-all-objects", "--batch", "--unordered")
		if err != nil {
			t.Errorf("reading the objects of %s: %v", r, err)
		}
		refs, _ := testgit.GitErr(t, r, nil, "--git-dir", r, "for-each-ref")
		blobs = append(blobs, leakBlob{r + " (objects)", objects}, leakBlob{r + " (refs)", refs})
	}
	return blobs
}

// leakForm is one form a secret may appear in.
type leakForm struct {
	name string // which secret
	how  string // which form
	form string
}

// secretSet returns the forms of every secret of files (by file name) and
// of the key lines.
func (e *leakEnv) secretSet(files map[string]string) []leakForm {
	var out []leakForm
	notSecret := map[string]bool{secRegAUser: true, secRegBUser: true, secCrossUser: true, secGitUser: true, secKnownHosts: true, secDockerCfg: true, secSignKey: true, secSSHKey: true}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if notSecret[n] {
			continue
		}
		out = append(out, secretForms(n, files[n])...)
	}
	// Basic auth pairs: user:password travels base64-encoded.
	pairs := [][2]string{
		{files[secRegAUser], files[secRegAPass]},
		{files[secRegBUser], files[secRegBPass]},
		{files[secCrossUser], files[secCrossPass]},
		{e.dockC.Username, e.dockC.Password},
		{files[secGitUser], files[secGitPass]},
		{"x-access-token", files[secGitToken]},
	}
	for _, p := range pairs {
		if p[1] == "" {
			continue
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			f := enc.EncodeToString([]byte(p[0] + ":" + p[1]))
			out = append(out, leakForm{name: "basic auth of " + p[0], how: "base64 user:password", form: f})
		}
	}
	out = append(out, secretForms("docker config password", e.dockC.Password)...)
	for n, v := range e.extra {
		out = append(out, leakForm{name: n, how: "raw", form: v})
	}
	return out
}

// secretForms returns the forms value may be printed in: raw, URL query
// and path escaped, JSON-escaped with and without HTML escaping, Go-quoted
// (text logs), base64 (standard and URL, with and without padding), and
// every 16-byte piece of the raw value (a cut secret is still a leak).
// They are spelled out here, not taken from internal/redact, so that a
// form redact forgets is still searched for.
func secretForms(name, value string) []leakForm {
	var out []leakForm
	add := func(how, f string) {
		for _, o := range out {
			if o.form == f {
				return
			}
		}
		out = append(out, leakForm{name: name, how: how, form: f})
	}
	add("raw", value)
	add("URL query escaped", url.QueryEscape(value))
	add("URL path escaped", url.PathEscape(value))
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(value)
		q := strings.TrimSuffix(b.String(), "\n")
		add(fmt.Sprintf("JSON-escaped (HTML escaping %v)", html), q[1:len(q)-1])
	}
	q := strconv.Quote(value)
	add("Go quoted", q[1:len(q)-1])
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		add("base64", enc.EncodeToString([]byte(value)))
	}
	const piece = 16
	if len(value) >= piece+8 {
		for i := 0; i+piece <= len(value); i++ {
			add("a piece", value[i:i+piece])
		}
	}
	return out
}

// excerpt shows the text around a found secret with the secret masked.
func excerpt(s string, i, n int) string {
	from, to := max(0, i-80), min(len(s), i+n+80)
	return strconv.Quote(s[from:i] + "[SECRET]" + s[i+n:to])
}

func sanitizeName(s string) string {
	return regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(s, "_")
}

// echoRegistry is a registry whose errors echo the request's credentials,
// as some proxies and badly written registries do. /v2/ answers 200 (no
// challenge: the client sends its token with every request); the first
// path component picks the answer to everything else:
//
//	e500     500, the credentials in several encodings
//	e500big  500 whose body is padded so that the token straddles 64 KiB
//	e401     401 with a Basic challenge, the credentials in the body
type echoRegistry struct {
	host string
}

func startEchoRegistry(t *testing.T) *echoRegistry {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" || r.URL.Path == "/v2" {
			w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
			fmt.Fprint(w, "{}")
			return
		}
		mode, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v2/"), "/")
		body := echoCredentials(r)
		w.Header().Set("Content-Type", "text/plain")
		switch mode {
		case "e500":
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, body)
		case "e500big":
			w.WriteHeader(http.StatusInternalServerError)
			_, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
			fmt.Fprint(w, strings.Repeat("x", 64<<10-len(cred)/2)+cred+"\n"+body)
		case "e401":
			w.Header().Set("WWW-Authenticate", `Basic realm="echo"`)
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, body)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return &echoRegistry{host: strings.TrimPrefix(srv.URL, "http://")}
}

// echoCredentials describes the credentials r carries in every form a
// careless server may print them in: the header, the credential raw,
// URL-encoded, JSON-escaped with and without HTML escaping, base64, and,
// for basic auth, the user and password.
func echoCredentials(r *http.Request) string {
	var b strings.Builder
	h := r.Header.Get("Authorization")
	fmt.Fprintf(&b, "request %s %s\nAuthorization: %s\n", r.Method, r.URL.String(), h)
	var creds []string
	if _, cred, ok := strings.Cut(h, " "); ok {
		creds = append(creds, cred)
	}
	if u, p, ok := r.BasicAuth(); ok {
		creds = append(creds, u+":"+p, p)
	}
	for _, c := range creds {
		j, _ := json.Marshal(c)
		var nj bytes.Buffer
		enc := json.NewEncoder(&nj)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(c)
		fmt.Fprintf(&b, "credential %s\nquery %s\njson %s\nraw json %s\nbase64 %s\n",
			c, url.QueryEscape(c), j, strings.TrimSpace(nj.String()), base64.StdEncoding.EncodeToString([]byte(c)))
	}
	return b.String()
}

// Modes of a gitFront.
const (
	frontPass    int32 = iota // proxy to the Git server
	frontEcho500              // 500 echoing the URL and the credentials
	frontEcho401              // 401 echoing them
)

// gitFront serves a Git server's repository at /acme/fleet.git, the path
// forges have, and can instead answer errors that echo the request.
type gitFront struct {
	url  string
	mode atomic.Int32
}

func startGitFront(t *testing.T, backendRepoURL string) *gitFront {
	t.Helper()
	backend, err := url.Parse(backendRepoURL)
	if err != nil {
		t.Fatal(err)
	}
	f := &gitFront{}
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.Out.URL.Scheme = backend.Scheme
		pr.Out.URL.Host = backend.Host
		pr.Out.URL.Path = backend.Path + strings.TrimPrefix(pr.In.URL.Path, "/"+leakOwnerRepo+".git")
		pr.Out.URL.RawPath = ""
		pr.Out.Host = backend.Host
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch f.mode.Load() {
		case frontEcho500:
			w.WriteHeader(http.StatusInternalServerError)
			u := *r.URL
			u.Scheme, u.Host = "http", r.Host
			if user, pass, ok := r.BasicAuth(); ok {
				u.User = url.UserPassword(user, pass)
			}
			fmt.Fprintf(w, "internal error at %s\n%s", u.String(), echoCredentials(r))
		case frontEcho401:
			w.Header().Set("WWW-Authenticate", `Basic realm="front"`)
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, echoCredentials(r))
		default:
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL + "/" + leakOwnerRepo + ".git"
	return f
}

func (f *gitFront) setMode(m int32) func() {
	f.mode.Store(m)
	return func() { f.mode.Store(frontPass) }
}

// Modes of a fakeGitHub.
const (
	forgeOK  int32 = iota
	forge401       // every call: 401, the token in the message
	forge403       // creating: 403, the token in the message
	forge422       // creating: 422, the token in the errors
)

// fakeGitHub speaks the part of GitHub's REST API the github adapter
// calls for one repository, acme/fleet, and records every request body.
type fakeGitHub struct {
	url  string
	mode atomic.Int32

	mu   sync.Mutex
	prs  []map[string]any
	reqs []string
}

func startFakeGitHub(t *testing.T) *fakeGitHub {
	t.Helper()
	f := &fakeGitHub{}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *fakeGitHub) setMode(m int32) func() {
	f.mode.Store(m)
	return func() { f.mode.Store(forgeOK) }
}

// reset forgets the pull requests.
func (f *fakeGitHub) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prs = nil
}

// clearRequests forgets the requests received.
func (f *fakeGitHub) clearRequests() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = nil
}

// bodies returns what the forge was sent: every request line and body.
func (f *fakeGitHub) bodies() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.reqs...)
}

// tokenMessage is a message that quotes the token the request carried.
func tokenMessage(what string, r *http.Request) string {
	_, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	return what + " for token " + tok + " (" + url.QueryEscape(tok) + ", " + base64.StdEncoding.EncodeToString([]byte(tok)) + ")"
}

func (f *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, r.Method+" "+r.URL.String()+"\n"+string(body))
	f.mu.Unlock()
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
	}
	mode := f.mode.Load()
	creating := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pulls")
	switch {
	case mode == forge401:
		reply(http.StatusUnauthorized, map[string]any{"message": tokenMessage("Bad credentials", r), "documentation_url": "https://docs.github.com/rest"})
		return
	case mode == forge403 && creating:
		reply(http.StatusForbidden, map[string]any{"message": tokenMessage("Resource not accessible by personal access token", r)})
		return
	case mode == forge422 && creating:
		reply(http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": []map[string]any{
			{"resource": "PullRequest", "code": "custom", "message": tokenMessage("head is not allowed", r)},
		}})
		return
	}
	prefix := "/repos/" + leakOwnerRepo
	path := strings.TrimPrefix(r.URL.Path, prefix)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && path == "/pulls":
		reply(http.StatusOK, f.prs)
	case creating:
		var in map[string]any
		_ = json.Unmarshal(body, &in)
		n := len(f.prs) + 1
		pr := map[string]any{
			"number": n, "state": "open", "title": in["title"], "body": in["body"],
			"html_url": fmt.Sprintf("%s/%s/pull/%d", "https://forge.invalid", leakOwnerRepo, n),
			"head":     map[string]any{"ref": in["head"]}, "base": map[string]any{"ref": in["base"]},
		}
		f.prs = append(f.prs, pr)
		reply(http.StatusCreated, pr)
	case r.Method == http.MethodPatch && strings.HasPrefix(path, "/pulls/"):
		n, _ := strconv.Atoi(strings.TrimPrefix(path, "/pulls/"))
		if n < 1 || n > len(f.prs) {
			reply(http.StatusNotFound, map[string]any{"message": "Not Found"})
			return
		}
		var in map[string]any
		_ = json.Unmarshal(body, &in)
		for k, v := range in {
			f.prs[n-1][k] = v
		}
		reply(http.StatusOK, f.prs[n-1])
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/labels"):
		reply(http.StatusOK, []map[string]any{{"name": "dependencies"}})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/comments"):
		reply(http.StatusCreated, map[string]any{"id": 1})
	default:
		reply(http.StatusNotFound, map[string]any{"message": "Not Found"})
	}
}
