package serve

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/internal/testkit/testgit"
	"github.com/imagebump/imagebump/internal/testkit/testregistry"
)

// sign returns the X-Hub-Signature-256 value of body under secret.
func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// aliasTransport is a registry transport whose connections to the named
// hosts (on any port) go to addr: one registry on loopback answers as
// docker.io, ghcr.io, quay.io and the rest, so that payloads name the
// hosts their senders name.
func aliasTransport(addr string, hosts ...string) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr.DialContext = func(ctx context.Context, network, hostport string) (net.Conn, error) {
		if h, _, err := net.SplitHostPort(hostport); err == nil && slices.Contains(hosts, h) {
			hostport = addr
		}
		return d.DialContext(ctx, network, hostport)
	}
	return tr
}

// postHook POSTs body to the server's /hook/name with headers (name,
// value pairs) and returns the status and the body of the answer.
func postHook(t *testing.T, base, pathAndQuery string, body io.Reader, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+pathAndQuery, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", strings.SplitN(pathAndQuery, "?", 2)[0], err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func readPayload(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "payloads", file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWebhookPayloadsTriggerScans runs serve with seven targets on an
// hourly schedule, each watching one repository, and sends each sender's
// payload (Docker Hub, Harbor in both formats, Quay, GitHub's package and
// registry_package, the generic one) after pushing the tag it names; a
// real CNCF distribution registry sends its own notifications. Each
// payload makes a commit on the target that watches the image within
// seconds, and no other target scans.
func TestWebhookPayloadsTriggerScans(t *testing.T) {
	reg := memRegistry(t)
	aliases := []string{"index.docker.io", "harbor.example.com", "quay.io", "ghcr.io", "registry.example.com"}
	dir := t.TempDir()
	secrets := map[string]string{
		"hub-token": "hub-7f1d2c3b4a5e6f70", "quay-token": "quay-0a9b8c7d6e5f4a3b", "harbor-token": "harbor-1b2c3d4e5f6a7b8c",
		"gh-secret": "gh-9e8d7c6b5a4f3e2d", "generic-secret": "generic-5c4b3a2f1e0d9c8b", "dist-token": "dist-3f2e1d0c9b8a7f6e",
	}
	for f, v := range secrets {
		writeTestFile(t, filepath.Join(dir, f), v+"\n")
	}

	// The real distribution registry sends its events to serve's
	// listener, which exists before either starts.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dist := testregistry.Start(t, testregistry.Options{Notify: &testregistry.Notify{
		URL:     "http://" + ln.Addr().String() + "/hook/registry",
		Headers: map[string][]string{"Authorization": {"Bearer " + secrets["dist-token"]}},
	}})
	dist.Push(t, "acme/dist", "0.1.0")

	type tgt struct {
		name, repo, pushRepo, tag string
		reg                       *testregistry.Server
	}
	targets := []tgt{
		{name: "hub", repo: "docker.io/acme/web", pushRepo: "acme/web", tag: "1.4.2", reg: reg},
		{name: "harbor", repo: "harbor.example.com/library/api", pushRepo: "library/api", tag: "2.0.1", reg: reg},
		{name: "harbor-ce", repo: "harbor.example.com/team/worker", pushRepo: "team/worker", tag: "3.1.0", reg: reg},
		{name: "quay", repo: "quay.io/acme/worker", pushRepo: "acme/worker", tag: "1.7.0", reg: reg},
		{name: "ghpkg", repo: "ghcr.io/acme/app", pushRepo: "acme/app", tag: "1.2.3", reg: reg},
		{name: "ghreg", repo: "ghcr.io/acme/cli", pushRepo: "acme/cli", tag: "0.9.0", reg: reg},
		{name: "generic", repo: "registry.example.com/acme/gen", pushRepo: "acme/gen", tag: "4.0.0", reg: reg},
		{name: "dist", repo: dist.Repo("acme/dist"), pushRepo: "acme/dist", tag: "1.1.0", reg: dist},
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "registries:\n")
	for _, h := range []string{"docker.io", "harbor.example.com", "quay.io", "ghcr.io", "registry.example.com", dist.Host} {
		fmt.Fprintf(&cfg, "  - {host: %q, insecure: true}\n", h)
	}
	fmt.Fprintf(&cfg, "images:\n")
	bares := map[string]string{}
	for _, tg := range targets {
		if tg.reg == reg {
			reg.Push(t, tg.pushRepo, "0.1.0")
		}
		policyName := tg.name + ":image"
		fmt.Fprintf(&cfg, "  - {name: %q, repository: %s, policy: {semver: \">=0.1.0\"}}\n", policyName, tg.repo)
		bares[tg.name] = testgit.NewBare(t, repoFiles(map[string]string{policyName: tg.repo + ":0.1.0"}))
	}
	fmt.Fprintf(&cfg, "targets:\n")
	for _, tg := range targets {
		fmt.Fprintf(&cfg, "  - {name: %s, git: {url: \"file://%s\", branch: main}, schedule: 1h, policies: [%q]}\n", tg.name, bares[tg.name], tg.name+":*")
	}
	cfg.WriteString(`webhooks:
  - {name: hub, tokenFile: hub-token, tokenInQuery: true}
  - {name: quay, tokenFile: quay-token, tokenInQuery: true}
  - {name: harbor, tokenFile: harbor-token}
  - {name: github, secretFile: gh-secret}
  - {name: generic, secretFile: generic-secret}
  - {name: registry, tokenFile: dist-token}
`)
	cfgFile := filepath.Join(dir, "imagebump.yaml")
	writeTestFile(t, cfgFile, cfg.String())
	logs := &lockedBuffer{}
	srv := runServer(t, cfgFile, filepath.Join(dir, "work"), Options{
		Listener:          ln,
		MaxJitter:         -1,
		RegistryTransport: aliasTransport(strings.TrimPrefix(reg.URL, "http://"), aliases...),
		Logger:            slog.New(slog.NewTextHandler(io.MultiWriter(logs, &testLogWriter{t: t}), &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	// Every target's first cycle, at start: nothing new yet.
	waitReal(t, 60*time.Second, func() bool {
		for _, ts := range srv.status(t).Targets {
			if ts.CyclesRun < 1 || ts.RunningSince != nil {
				return false
			}
		}
		return true
	}, "every target's first cycle")
	for _, ts := range srv.status(t).Targets {
		if c := ts.Cycles[0]; c.Result != ResultSuccess || c.Pushed {
			t.Fatalf("target %s's first cycle: %+v", ts.Name, c)
		}
	}

	tests := []struct {
		target  string
		send    func(t *testing.T) (int, string)
		trigger string
	}{
		{"hub", func(t *testing.T) (int, string) {
			return postHook(t, srv.url, "/hook/hub?token="+secrets["hub-token"], bytes.NewReader(readPayload(t, "dockerhub.json")))
		}, "webhook hub: docker.io/acme/web:1.4.2"},
		{"harbor", func(t *testing.T) (int, string) {
			return postHook(t, srv.url, "/hook/harbor", bytes.NewReader(readPayload(t, "harbor.json")), "Authorization", "Bearer "+secrets["harbor-token"])
		}, "webhook harbor: harbor.example.com/library/api:2.0.1"},
		{"harbor-ce", func(t *testing.T) (int, string) {
			return postHook(t, srv.url, "/hook/harbor", bytes.NewReader(readPayload(t, "harbor-cloudevents.json")), "Authorization", "Bearer "+secrets["harbor-token"])
		}, "webhook harbor: harbor.example.com/team/worker:3.1.0"},
		{"quay", func(t *testing.T) (int, string) {
			return postHook(t, srv.url, "/hook/quay?token="+secrets["quay-token"], bytes.NewReader(readPayload(t, "quay.json")))
		}, "webhook quay: quay.io/acme/worker:1.7.0"},
		{"ghpkg", func(t *testing.T) (int, string) {
			body := readPayload(t, "github-package.json")
			return postHook(t, srv.url, "/hook/github", bytes.NewReader(body), SignatureHeader, sign(secrets["gh-secret"], body), "X-GitHub-Event", "package")
		}, "webhook github: ghcr.io/acme/app:1.2.3"},
		{"ghreg", func(t *testing.T) (int, string) {
			body := readPayload(t, "github-registry-package.json")
			return postHook(t, srv.url, "/hook/github", bytes.NewReader(body), SignatureHeader, sign(secrets["gh-secret"], body), "X-GitHub-Event", "registry_package")
		}, "webhook github: ghcr.io/acme/cli:0.9.0"},
		{"generic", func(t *testing.T) (int, string) {
			body := readPayload(t, "generic.json")
			return postHook(t, srv.url, "/hook/generic", bytes.NewReader(body), SignatureHeader, sign(secrets["generic-secret"], body))
		}, "webhook generic: registry.example.com/acme/gen:4.0.0"},
		// The registry itself sends the event, on the push.
		{"dist", nil, "webhook registry: " + dist.Repo("acme/dist") + ":1.1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			i := slices.IndexFunc(targets, func(tg tgt) bool { return tg.name == tt.target })
			tg := targets[i]
			before := head(t, bares[tg.name])
			tg.reg.Push(t, tg.pushRepo, tg.tag)
			sent := time.Now()
			if tt.send != nil {
				code, body := tt.send(t)
				var resp hookResponse
				if err := json.Unmarshal([]byte(body), &resp); err != nil || code != http.StatusAccepted {
					t.Fatalf("answer %d %s (%v), want 202 with a JSON body", code, body, err)
				}
				if resp.Result != hookTriggered || !slices.Equal(resp.Targets, []string{tg.name}) {
					t.Errorf("answer %+v, want triggered [%s]", resp, tg.name)
				}
			}
			waitReal(t, 30*time.Second, func() bool { return head(t, bares[tg.name]) != before }, "the bump's commit")
			took := time.Since(sent)
			t.Logf("%s: commit %s after the event", tg.name, took.Round(time.Millisecond))
			// The debounce (2s), a cycle of a second or two, and slack for
			// a loaded machine: seconds, against a schedule of an hour.
			if took > 20*time.Second {
				t.Errorf("the commit came %s after the event", took)
			}
			if got, _ := testgit.ReadFile(t, bares[tg.name], "main", "deploy/"+tg.name+"-image.yaml"); !strings.Contains(got, ":"+tg.tag+" ") {
				t.Errorf("pushed file: %q", got)
			}
			// The status records the cycle once it has returned, just
			// after its push.
			var c *CycleStatus
			waitReal(t, 10*time.Second, func() bool {
				ts := srv.target(t, tg.name)
				for i := range ts.Cycles {
					if ts.Cycles[i].Pushed {
						c = &ts.Cycles[i]
						return true
					}
				}
				return false
			}, "the bump's cycle in the status")
			if c == nil || c.Reason != ReasonTrigger || !slices.Contains(c.Triggers, tt.trigger) {
				t.Errorf("the bump's cycle: %+v, want reason trigger with %q", c, tt.trigger)
			}
		})
	}

	// No target scanned for another's image: each cycle a webhook started
	// names its own target's repository, and the targets that only got
	// their own payload ran twice (at start, and for it).
	for _, ts := range srv.status(t).Targets {
		i := slices.IndexFunc(targets, func(tg tgt) bool { return tg.name == ts.Name })
		for _, c := range ts.Cycles {
			for _, tr := range c.Triggers {
				if !strings.Contains(tr, ": "+targets[i].repo+":") && !strings.HasSuffix(tr, ": "+targets[i].repo) {
					t.Errorf("target %s scanned for %q", ts.Name, tr)
				}
			}
		}
		if ts.Name != "dist" && ts.CyclesRun != 2 {
			t.Errorf("target %s ran %d cycles, want 2 (start and its webhook): %+v", ts.Name, ts.CyclesRun, ts.Cycles)
		}
	}
	m := scrape(t, srv.Handler())
	for hook, want := range map[string]float64{"hub": 1, "quay": 1, "harbor": 2, "github": 2, "generic": 1} {
		if got, _ := metricValue(m, "imagebump_webhooks_total", "hook", hook, "result", hookTriggered); got != want {
			t.Errorf("imagebump_webhooks_total{hook=%q,result=triggered} = %v, want %v", hook, got, want)
		}
	}
	// The registry's blob pushes and pulls are counted as skipped, its
	// manifest pushes as triggered.
	if got, _ := metricValue(m, "imagebump_webhooks_total", "hook", "registry", "result", hookTriggered); got < 1 {
		t.Errorf("the registry's notifications triggered nothing: %v", got)
	}
	for _, v := range secrets {
		if strings.Contains(logs.String(), v) {
			t.Errorf("a secret is in the logs")
		}
	}
}

// lockedBuffer is a bytes.Buffer for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// chunked hides a reader's length, so that the request is sent without a
// Content-Length.
type chunked struct{ r io.Reader }

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

// TestWebhookRefusals sends requests that must do nothing: a wrong
// signature, a missing one, a body replayed with another body's
// signature, a 10 MB body (with and without Content-Length), wrong or
// missing tokens, a token in the query of a webhook that does not take
// one, a wrong method, an unknown webhook, a body that is no payload, a
// push of an image no policy watches, and GitHub's ping. Each gets its
// status and a log record without the secret; no cycle runs. A good
// request then does run one, so that the test can fail.
func TestWebhookRefusals(t *testing.T) {
	reg := memRegistry(t)
	reg.Push(t, "acme/web", "1.0.0")
	bare := testgit.NewBare(t, repoFiles(map[string]string{"apps:web": reg.Repo("acme/web") + ":1.0.0"}))
	dir := t.TempDir()
	const secret, token = "s3cr3t-hmac-key-0d9f", "t0k3n-bearer-7c2e"
	writeTestFile(t, filepath.Join(dir, "hook-secret"), secret+"\n")
	writeTestFile(t, filepath.Join(dir, "hook-token"), token+"\n")
	cfgFile := filepath.Join(dir, "imagebump.yaml")
	writeTestFile(t, cfgFile, fmt.Sprintf(`registries: [{host: %q, insecure: true}]
images: [{name: apps:web, repository: %s, policy: {semver: ">=1.0.0"}}]
git: {url: "file://%s", branch: main}
schedule: 1h
webhooks:
  - {name: signed, secretFile: hook-secret}
  - {name: bearer, tokenFile: hook-token}
`, reg.Host, reg.Repo("acme/web"), bare))
	logs := &lockedBuffer{}
	srv := runServer(t, cfgFile, filepath.Join(dir, "work"), Options{
		MaxJitter: -1,
		Debounce:  200 * time.Millisecond,
		Logger:    slog.New(slog.NewJSONHandler(io.MultiWriter(logs, &testLogWriter{t: t}), nil)),
	})
	waitReal(t, 30*time.Second, func() bool {
		return srv.target(t, "default").CyclesRun == 1 && srv.target(t, "default").RunningSince == nil
	}, "the first cycle")
	reg.Push(t, "acme/web", "1.1.0") // a scan now would commit

	good := []byte(fmt.Sprintf(`{"repository": %q, "tag": "1.1.0"}`, reg.Repo("acme/web")))
	other := []byte(fmt.Sprintf(`{"repository": %q, "tag": "9.9.9"}`, reg.Repo("acme/web")))
	big := bytes.Repeat([]byte("x"), 10<<20)
	bigJSON := append(append([]byte(`{"repository": "`+reg.Repo("acme/web")+`", "tag": "1.1.0", "pad": "`), big...), []byte(`"}`)...)
	unwatched := []byte(`{"repository": "ghcr.io/acme/nobody", "tag": "1.0.0"}`)
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusMethodNotAllowed && resp.Header.Get("Allow") != http.MethodPost {
			t.Errorf("405 with Allow %q, want POST", resp.Header.Get("Allow"))
		}
		return resp.StatusCode, string(b)
	}
	for _, tt := range []struct {
		name   string
		send   func() (int, string)
		status int
		result string
		reason string // in the log record
	}{
		{"wrong signature", func() (int, string) {
			return postHook(t, srv.url, "/hook/signed", bytes.NewReader(good), SignatureHeader, sign("not-the-secret", good))
		}, 401, hookUnauthorized, "the signature does not match the body"},
		{"no signature", func() (int, string) { return postHook(t, srv.url, "/hook/signed", bytes.NewReader(good)) }, 401, hookUnauthorized, "no X-Hub-Signature-256 header"},
		{"malformed signature", func() (int, string) {
			return postHook(t, srv.url, "/hook/signed", bytes.NewReader(good), SignatureHeader, "sha1=0123")
		}, 401, hookUnauthorized, "malformed X-Hub-Signature-256"},
		{"body replayed with another body's signature", func() (int, string) {
			return postHook(t, srv.url, "/hook/signed", bytes.NewReader(good), SignatureHeader, sign(secret, other))
		}, 401, hookUnauthorized, "the signature does not match the body"},
		{"10 MB body, signed", func() (int, string) {
			return postHook(t, srv.url, "/hook/signed", bytes.NewReader(bigJSON), SignatureHeader, sign(secret, bigJSON))
		}, 413, hookTooLarge, "over the limit"},
		{"10 MB body without Content-Length", func() (int, string) {
			return postHook(t, srv.url, "/hook/signed", chunked{bytes.NewReader(bigJSON)}, SignatureHeader, sign(secret, bigJSON))
		}, 413, hookTooLarge, "over the limit"},
		{"no token", func() (int, string) { return postHook(t, srv.url, "/hook/bearer", bytes.NewReader(good)) }, 401, hookUnauthorized, "no token"},
		{"wrong token", func() (int, string) {
			return postHook(t, srv.url, "/hook/bearer", bytes.NewReader(good), "Authorization", "Bearer "+token+"x")
		}, 401, hookUnauthorized, "the token does not match"},
		{"token in the query, not allowed", func() (int, string) {
			return postHook(t, srv.url, "/hook/bearer?token="+token, bytes.NewReader(good))
		}, 401, hookUnauthorized, "no token"},
		{"the secret as a bearer token", func() (int, string) {
			return postHook(t, srv.url, "/hook/signed", bytes.NewReader(good), "Authorization", "Bearer "+secret)
		}, 401, hookUnauthorized, "no X-Hub-Signature-256 header"},
		{"GET", func() (int, string) { return get("/hook/signed") }, 405, hookMethodNotAllowed, "method GET"},
		{"unknown webhook", func() (int, string) {
			return postHook(t, srv.url, "/hook/nope", bytes.NewReader(good), SignatureHeader, sign(secret, good))
		}, 404, hookNotFound, "no webhook of that name"},
		{"not a payload", func() (int, string) {
			body := []byte(`{"image": "x"}`)
			return postHook(t, srv.url, "/hook/signed", bytes.NewReader(body), SignatureHeader, sign(secret, body))
		}, 400, hookBadRequest, "unrecognised webhook payload"},
		{"not JSON", func() (int, string) {
			return postHook(t, srv.url, "/hook/bearer", strings.NewReader("repository=x"), "Authorization", "Bearer "+token)
		}, 400, hookBadRequest, "not a JSON object"},
		{"an image no policy watches", func() (int, string) {
			return postHook(t, srv.url, "/hook/bearer", bytes.NewReader(unwatched), "Authorization", "Bearer "+token)
		}, 202, hookIgnored, ""},
		{"GitHub's ping", func() (int, string) {
			body := []byte(`{"zen": "Keep it logically awesome.", "hook_id": 1}`)
			return postHook(t, srv.url, "/hook/signed", bytes.NewReader(body), SignatureHeader, sign(secret, body), "X-GitHub-Event", "ping")
		}, 200, hookPing, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := logs.String()
			code, body := tt.send()
			if code != tt.status {
				t.Errorf("status %d (%s), want %d", code, strings.TrimSpace(body), tt.status)
			}
			added := strings.TrimPrefix(logs.String(), before)
			if tt.reason != "" && (!strings.Contains(added, `"msg":"webhook refused"`) || !strings.Contains(added, tt.reason) || !strings.Contains(added, `"result":"`+tt.result+`"`)) {
				t.Errorf("log records %q, want a webhook refused record with %q and result %s", added, tt.reason, tt.result)
			}
			for _, s := range []string{secret, token} {
				if strings.Contains(added, s) || strings.Contains(body, s) {
					t.Errorf("a secret is in the log or the answer")
				}
			}
		})
	}

	// Nothing ran: no cycle after the debounce, nothing planned but the
	// schedule.
	time.Sleep(time.Second)
	ts := srv.target(t, "default")
	if ts.CyclesRun != 1 || ts.RunningSince != nil || ts.NextReason == ReasonTrigger {
		t.Fatalf("after refused requests: %d cycles, running %v, next %s", ts.CyclesRun, ts.RunningSince, ts.NextReason)
	}
	m := scrape(t, srv.Handler())
	for _, c := range []struct {
		hook, result string
		want         float64
	}{
		{"signed", hookUnauthorized, 5}, {"bearer", hookUnauthorized, 3}, {"signed", hookTooLarge, 2},
		{"signed", hookMethodNotAllowed, 1}, {"", hookNotFound, 1}, {"signed", hookBadRequest, 1}, {"bearer", hookBadRequest, 1},
		{"bearer", hookIgnored, 1}, {"signed", hookPing, 1}, {"signed", hookTriggered, 0},
	} {
		if got, _ := metricValue(m, "imagebump_webhooks_total", "hook", c.hook, "result", c.result); got != c.want {
			t.Errorf("imagebump_webhooks_total{hook=%q,result=%q} = %v, want %v", c.hook, c.result, got, c.want)
		}
	}
	if got, _ := metricValue(m, "imagebump_webhook_images_total", "hook", "bearer", "result", hookIgnored); got != 1 {
		t.Errorf("ignored images counted: %v, want 1", got)
	}
	st := srv.status(t)
	if len(st.Webhooks) != 2 || st.Webhooks[0].Name != "signed" || st.Webhooks[0].Refused != 9 || st.Webhooks[0].Auth != "hmac-sha256" {
		t.Errorf("webhook status: %+v", st.Webhooks)
	}

	// The good request: a scan, and the commit.
	before := head(t, bare)
	if code, body := postHook(t, srv.url, "/hook/signed", bytes.NewReader(good), SignatureHeader, sign(secret, good)); code != http.StatusAccepted {
		t.Fatalf("the good request: %d %s", code, body)
	}
	waitReal(t, 30*time.Second, func() bool { return head(t, bare) != before }, "the good request's commit")
	// The status records the cycle once it has returned, just after its push.
	waitReal(t, 10*time.Second, func() bool { return srv.target(t, "default").CyclesRun == 2 }, "the good request's cycle in the status")
}

// TestWebhookSecretRotates replaces the token file while serve runs: the
// new token is accepted at once and the old one refused, without a reload.
func TestWebhookSecretRotates(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	writeTestFile(t, tokenFile, "old-token\n")
	cfgFile := filepath.Join(dir, "imagebump.yaml")
	writeTestFile(t, cfgFile, `images: [{name: app, repository: ghcr.io/acme/app, policy: {semver: ">=1"}}]
git: {url: "https://git.example/fleet.git"}
schedule: 1h
webhooks: [{name: r, tokenFile: token}]
`)
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Config: cfg, Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	send := func(tok string) int {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/hook/r", strings.NewReader(`{"repository": "ghcr.io/acme/other"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		s.Handler().ServeHTTP(rec, req)
		return rec.Code
	}
	if got := send("old-token"); got != http.StatusAccepted {
		t.Fatalf("old token before the rotation: %d", got)
	}
	writeTestFile(t, tokenFile, "new-token\n")
	if got := send("new-token"); got != http.StatusAccepted {
		t.Errorf("new token after the rotation: %d, want 202", got)
	}
	if got := send("old-token"); got != http.StatusUnauthorized {
		t.Errorf("old token after the rotation: %d, want 401", got)
	}
	os.Remove(tokenFile)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/hook/r", strings.NewReader(`{}`)))
	if rec.Code != http.StatusInternalServerError || strings.Contains(rec.Body.String(), dir) {
		t.Errorf("token file gone: %d %q, want 500 without the file's path", rec.Code, rec.Body)
	}
}

// TestWebhookWhileStopping: an event that arrives during the grace period
// of a stop is refused with 503 and Retry-After, so that the registry
// sends it again (to another replica, or to this one restarted): a 202
// would lose it, as no cycle starts any more.
func TestWebhookWhileStopping(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "tok")
	writeTestFile(t, tok, "s3cret\n")
	cfg, err := config.Parse([]byte(`
images: [{name: app, repository: reg.example/app, policy: {semver: ">=1.0.0"}}]
webhooks: [{name: ci, tokenFile: `+tok+`}]
targets:
  - {name: a, git: {url: "file:///nonexistent/a.git", branch: main}, schedule: 1h}
`), filepath.Join(dir, "imagebump.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(t, Options{Config: cfg, MaxJitter: -1, Grace: time.Minute})
	release := f.holdTarget("a")
	f.start()
	<-f.runner.started
	send := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/hook/ci", strings.NewReader(`{"repository":"reg.example/app","tag":"1.2.3"}`))
		req.Header.Set("Authorization", "Bearer s3cret")
		f.Handler().ServeHTTP(rec, req)
		return rec
	}
	if rec := send(); rec.Code != http.StatusAccepted {
		t.Fatalf("before the stop: %d %s, want 202", rec.Code, rec.Body)
	}
	f.signals <- syscall.SIGTERM
	f.clock.WaitTimers(t, 1) // the grace timer: the stop has begun
	rec := send()
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "stopping") {
		t.Errorf("during the stop: %d, Retry-After %q, %q; want 503 with Retry-After saying it stops", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if got := counterValue(t, f.Server, "imagebump_webhooks_total", "hook", "ci", "result", "stopping"); got != 1 {
		t.Errorf("imagebump_webhooks_total{result=stopping} = %v, want 1", got)
	}
	release()
}
