package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/internal/stopsignal"
	"github.com/imagebump/imagebump/internal/testkit/serveproc"
	"github.com/imagebump/imagebump/internal/testkit/testgit"
	"github.com/imagebump/imagebump/serve"
)

// serveProcess is `imagebump serve` running as a process of its own (the
// test binary under asBinaryEnv), so that it gets real signals.
type serveProcess struct{ *serveproc.Process }

func startServe(t *testing.T, args ...string) *serveProcess {
	t.Helper()
	return startServeEnv(t, nil, args...)
}

// startServeEnv is startServe with more environment variables (NAME=VALUE).
func startServeEnv(t *testing.T, env []string, args ...string) *serveProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(append(os.Environ(), asBinaryEnv+"=1"), env...)
	return &serveProcess{serveproc.Start(t, cmd)}
}

func (p *serveProcess) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.Cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// exit waits up to d for the process to exit and returns its exit code.
func (p *serveProcess) exit(t *testing.T, d time.Duration) int {
	t.Helper()
	return p.Exit(t, d)
}

func (p *serveProcess) status(t *testing.T) serve.Status {
	t.Helper()
	return p.Status(t)
}

// metric returns the value of the counter or gauge name whose labels
// include labels (name, value pairs).
func (p *serveProcess) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	return p.Metric(t, name, labels...)
}

// records returns its log records, one JSON object per line of standard
// error, and the lines that are not JSON.
func (p *serveProcess) records() (records []map[string]any, bad []string) {
	for _, l := range p.Lines() {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			bad = append(bad, l)
			continue
		}
		records = append(records, rec)
	}
	return records, bad
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeProcessSignals runs `imagebump serve` as a process and sends
// it real signals: it bumps the demo repository, refuses a broken config
// on SIGHUP (counted, old config kept), and exits 0 on SIGTERM; its logs
// are JSON.
func TestServeProcessSignals(t *testing.T) {
	host := startMemRegistry(t)
	bare := testgit.NewBare(t, demoRepoFiles(t, host))
	dir := t.TempDir()
	cfg := runConfig(t, dir, host, "  url: file://"+bare+"\n  branch: main\n", "schedule: 1s\n")
	before := strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "refs/heads/main"))
	p := startServe(t, "-c", cfg, "--workdir", filepath.Join(dir, "work"), "--grace", "20s")

	waitUntil(t, 60*time.Second, "the demo's bump", func() bool {
		st := p.status(t)
		return len(st.Targets) == 1 && len(st.Targets[0].Cycles) > 0 && st.Targets[0].Cycles[len(st.Targets[0].Cycles)-1].Pushed
	})
	after := strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "refs/heads/main"))
	if after == before {
		t.Fatal("the status says pushed, the remote did not move")
	}

	// A config naming a file that is not there loads, with a warning
	// naming it; so does the next reload.
	good, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(good, "webhooks:\n  - {name: hub, secretFile: hook-secret-not-mounted}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	p.signal(t, syscall.SIGHUP)
	waitUntil(t, 30*time.Second, "the reload naming a missing file", func() bool {
		return p.metric(t, "imagebump_config_reloads_total", "result", "success") == 1
	})

	if err := os.WriteFile(cfg, []byte("images: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.signal(t, syscall.SIGHUP)
	waitUntil(t, 30*time.Second, "the refused reload", func() bool {
		return p.metric(t, "imagebump_config_reloads_total", "result", "failure") == 1
	})
	st := p.status(t)
	if r := st.Config.LastReload; r == nil || r.Result != "failure" {
		t.Errorf("last reload: %+v", r)
	}
	n := st.Targets[0].CyclesRun
	waitUntil(t, 30*time.Second, "cycles under the old config", func() bool { return p.status(t).Targets[0].CyclesRun > n })

	p.signal(t, syscall.SIGTERM)
	if code := p.exit(t, 30*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	records, bad := p.records()
	if len(bad) > 0 {
		t.Errorf("stderr lines that are not JSON: %q", bad)
	}
	var msgs []string
	for _, l := range records {
		m := l["msg"].(string)
		switch {
		case m == "config reload refused; the running config stays" || m == "stopping" || m == "stopped":
			msgs = append(msgs, m)
		case strings.HasPrefix(m, "a file the config names does not exist"):
			msgs = append(msgs, m+" "+l["key"].(string))
		}
	}
	if diff := cmp.Diff(msgs, []string{"a file the config names does not exist: what reads it fails until it does webhooks[0].secretFile", "config reload refused; the running config stays", "stopping", "stopped"}); diff != "" {
		t.Errorf("log records (-got +want):\n%s", diff)
	}
	if got := strings.TrimSpace(testgit.Git(t, bare, "rev-parse", "refs/heads/main")); got != after {
		t.Errorf("remote main moved after the bump: %s -> %s", after, got)
	}
}

// TestServeWarnsUnmatchedPolicies: a target's policies entry that
// matches no policy (a typo) made cycles that succeed, bumping nothing,
// with no word in the logs; serve now warns of it as validate does, at
// the start (and at each reload).
func TestServeWarnsUnmatchedPolicies(t *testing.T) {
	bare := testgit.NewBare(t, map[string]string{"README.md": "fleet\n"})
	dir := t.TempDir()
	cfg := writeFile(t, dir, "imagebump.yaml", `images:
  - {name: apps:web, repository: reg.example/acme/web, policy: {semver: ">=1"}}
targets:
  - name: prod
    git: {url: "file://`+bare+`", branch: main}
    policies: ["prod:*"]
    schedule: 1h
`)
	p := startServe(t, "-c", cfg, "--workdir", filepath.Join(dir, "work"))
	waitUntil(t, 30*time.Second, "serve's start", func() bool { return len(p.status(t).Targets) == 1 })
	p.signal(t, syscall.SIGTERM)
	p.exit(t, 30*time.Second)
	records, _ := p.records()
	for _, r := range records {
		if r["level"] == "WARN" && strings.Contains(r["msg"].(string), `target prod: policies entry "prod:*" matches no image policy`) && r["config"] == cfg+":4" {
			return
		}
	}
	t.Errorf("no warning naming the policies entry and its line:\n%s", strings.Join(p.Lines(), "\n"))
}

// TestServeProcessSecondSignal stops `imagebump serve` with two SIGTERMs
// while its cycle hangs on a registry that never answers: the first starts
// the grace period (a minute), the second exits at once with 1.
func TestServeProcessSecondSignal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // never answered
		}
	}()
	hole := ln.Addr().String()
	bare := testgit.NewBare(t, map[string]string{"app.yaml": "image: " + hole + "/acme/app:1.0.0 # {\"$imagepolicy\": \"default:app\"}\n"})
	dir := t.TempDir()
	cfg := writeFile(t, dir, "imagebump.yaml", `registries: [{host: "`+hole+`", insecure: true}]
images: [{name: app, repository: `+hole+`/acme/app, policy: {semver: ">=1.0.0"}}]
git: {url: "file://`+bare+`", branch: main}
schedule: 10s
`)
	p := startServe(t, "-c", cfg, "--workdir", filepath.Join(dir, "work"), "--grace", "1m", "--log-format", "json")
	// An interval's first cycle starts within its jitter window (a second
	// for 10s); the registry's timeout is 30s.
	waitUntil(t, 30*time.Second, "the hanging cycle", func() bool { return p.status(t).Targets[0].RunningSince != nil })
	p.signal(t, syscall.SIGTERM)
	waitUntil(t, 10*time.Second, "the stop", func() bool { return p.status(t).Stopping })
	select {
	case <-p.Done():
		t.Fatal("serve exited on the first signal while a cycle runs and the grace period is a minute")
	case <-time.After(stopsignal.Window + 300*time.Millisecond): // sooner, it is the same signal sent twice
	}
	start := time.Now()
	p.signal(t, syscall.SIGTERM)
	if code := p.exit(t, 10*time.Second); code != ExitFailure {
		t.Errorf("exit code %d after a second SIGTERM, want %d", code, ExitFailure)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("exit took %s after the second signal", d)
	}
}

// TestServeFlags checks how `serve` parses its flags, apart from running.
func TestServeFlags(t *testing.T) {
	t.Setenv("HOSTNAME", "imagebump-2") // as Kubernetes sets it in a StatefulSet's third pod
	tests := []struct {
		name string
		args []string
		want ServeOptions
		code int
	}{
		{"defaults", nil, ServeOptions{Listen: ":8080", Grace: 30 * time.Second, UnreadyAfter: time.Hour, Concurrency: 4}, 0},
		{"all", []string{"--listen", "127.0.0.1:9090", "--workdir", "/var/lib/imagebump", "--grace", "1m", "--unready-after", "0", "--concurrency", "8"},
			ServeOptions{Listen: "127.0.0.1:9090", Workdir: "/var/lib/imagebump", Grace: time.Minute, Concurrency: 8}, 0},
		{"shard", []string{"--shard", "1/3"}, ServeOptions{Listen: ":8080", Grace: 30 * time.Second, UnreadyAfter: time.Hour, Concurrency: 4, Shard: serve.Shard{Index: 1, Count: 3}, shardSpec: "1/3"}, 0},
		{"shard from the pod name", []string{"--shard=auto/3"}, ServeOptions{Listen: ":8080", Grace: 30 * time.Second, UnreadyAfter: time.Hour, Concurrency: 4, Shard: serve.Shard{Index: 2, Count: 3}, shardSpec: "auto/3"}, 0},
		{"shard beyond the replicas", []string{"--shard=auto/2"}, ServeOptions{}, ExitUsage},
		{"shard index too high", []string{"--shard", "3/3"}, ServeOptions{}, ExitUsage},
		{"shard without N", []string{"--shard", "1"}, ServeOptions{}, ExitUsage},
		{"health address", []string{"--health-listen", ":9440"}, ServeOptions{Listen: ":8080", HealthListen: ":9440", Grace: 30 * time.Second, UnreadyAfter: time.Hour, Concurrency: 4}, 0},
		{"health address the same as --listen", []string{"--listen", ":9090", "--health-listen", ":9090"}, ServeOptions{}, ExitUsage},
		{"health address on every host, --listen on one", []string{"--listen", "127.0.0.1:9090", "--health-listen", "0.0.0.0:9090"}, ServeOptions{}, ExitUsage},
		{"both on any free port", []string{"--listen", "127.0.0.1:0", "--health-listen", "127.0.0.1:0"}, ServeOptions{Listen: "127.0.0.1:0", HealthListen: "127.0.0.1:0", Grace: 30 * time.Second, UnreadyAfter: time.Hour, Concurrency: 4}, 0},
		{"the same port on two hosts", []string{"--listen", "10.0.0.1:9090", "--health-listen", "127.0.0.1:9090"}, ServeOptions{Listen: "10.0.0.1:9090", HealthListen: "127.0.0.1:9090", Grace: 30 * time.Second, UnreadyAfter: time.Hour, Concurrency: 4}, 0},
		{"negative grace", []string{"--grace", "-1s"}, ServeOptions{}, ExitUsage},
		{"no concurrency", []string{"--concurrency", "0"}, ServeOptions{}, ExitUsage},
		{"an argument", []string{"extra"}, ServeOptions{}, ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got ServeOptions
			cmd := NewCmdServe(&globalOptions{}, func(_ context.Context, o *ServeOptions) error {
				got = *o
				got.global = nil
				return nil
			})
			cmd.SetArgs(tt.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
			code := exitCode(cmd.Execute())
			if code != tt.code {
				t.Fatalf("exit code %d, want %d", code, tt.code)
			}
			if diff := cmp.Diff(got, tt.want, cmp.AllowUnexported(ServeOptions{})); code == 0 && diff != "" {
				t.Errorf("options (-got +want):\n%s", diff)
			}
		})
	}
}

// TestServeRefusesBadConfig exits 64 before serving when the config is
// invalid or has no target.
func TestServeRefusesBadConfig(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"invalid":   "images: [\n",
		"no target": "images: [{name: app, repository: reg.example/app, policy: {semver: \">=1\"}}]\n",
	} {
		t.Run(name, func(t *testing.T) {
			cfg := writeFile(t, dir, strings.ReplaceAll(name, " ", "-")+".yaml", text)
			_, stderr, code := runMain(t, "serve", "-c", cfg, "--listen", "127.0.0.1:0", "--workdir", filepath.Join(dir, "work"))
			if code != ExitUsage {
				t.Errorf("exit %d, want %d; stderr: %s", code, ExitUsage, stderr)
			}
		})
	}
}

// TestServeWarnsMissingFiles: a file the config names that is not there (a
// webhook's secret, here) is logged at load, rather than found by the
// first delivery that reads it; a file that is there, and env:NAME, are
// not.
func TestServeWarnsMissingFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "secrets/present", "s3cret")
	cfg := writeFile(t, dir, "imagebump.yaml", `registries:
  - {host: reg.example, caFile: ca-not-there.pem}
webhooks:
  - {name: registry, secretFile: secrets/missing}
  - {name: hub, secretFile: secrets/present}
  - {name: env, tokenFile: env:HOOK_TOKEN}
images:
  - {name: apps:web, repository: ghcr.io/acme/web, policy: {semver: ">=1.0.0"}}
`)
	c, err := config.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	warnMissingFiles(c, slog.New(slog.NewTextHandler(&logs, nil)))
	got := logs.String()
	if n := strings.Count(got, "level=WARN"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, got)
	}
	// A missing caFile is warned of by the registry client when it is
	// made (with its host), not here.
	for _, want := range []string{"webhooks[0].secretFile", filepath.Join(dir, "secrets/missing"), cfg + ":4"} {
		if !strings.Contains(got, want) {
			t.Errorf("the warning lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "s3cret") {
		t.Errorf("the warning holds the secret:\n%s", got)
	}
}
