package deploy_test

import (
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// maxExposure is the highest overall exposure systemd-analyze security may
// give the units (Debian 12's systemd 252 rates them 1.1; 5.0 and above is
// "MEDIUM"). A unit that loses a hardening setting fails here.
const maxExposure = 1.1

// credentialsDir is where systemd puts the LoadCredential= files of a unit
// named imagebump.service, which both the serve and the timer variants are.
const credentialsDir = "/run/credentials/imagebump.service/"

// TestSystemdUnits rates each unit with systemd-analyze security (offline:
// no running systemd needed), checks that systemd-analyze verify finds
// nothing wrong with it, and that the VM config names only credentials
// the unit loads.
func TestSystemdUnits(t *testing.T) {
	analyze := testgit.RequireProgram(t, "systemd-analyze", "systemd")
	bin := hostBinary(t)
	cfg := loadConfig(t, "deploy/vm/imagebump.yaml")
	if len(secretPaths(cfg, "run")) == 0 {
		t.Fatal("the VM config references no secret file; the test would prove nothing")
	}

	tests := []struct {
		dir     string
		units   []string
		command string
	}{
		{dir: "deploy/vm/serve", units: []string{"imagebump.service"}, command: "serve"},
		{dir: "deploy/vm/timer", units: []string{"imagebump.service", "imagebump.timer"}, command: "run"},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			service := filepath.Join(repoRoot, tt.dir, "imagebump.service")
			out, stderr, err := runCmd(analyze, "security", "--offline=true", "--no-pager", service)
			if err != nil || stderr != "" {
				t.Fatalf("systemd-analyze security: %v\n%s", err, stderr)
			}
			m := regexp.MustCompile(`Overall exposure level for imagebump\.service: (\d+\.\d) (\w+)`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no overall exposure in:\n%s", out)
			}
			score, _ := strconv.ParseFloat(m[1], 64)
			t.Logf("systemd-analyze security: %s %s", m[1], m[2])
			if score > maxExposure || !slices.Contains([]string{"PERFECT", "SAFE", "OK"}, m[2]) {
				t.Errorf("exposure %s %s, want at most %.1f and OK or better:\n%s", m[1], m[2], maxExposure, out)
			}

			// verify needs the ExecStart program to exist: point the
			// units at a freshly built imagebump.
			dir := t.TempDir()
			var args []string
			for _, u := range tt.units {
				b, err := os.ReadFile(filepath.Join(repoRoot, tt.dir, u))
				if err != nil {
					t.Fatal(err)
				}
				b = bytes.ReplaceAll(b, []byte("/usr/local/bin/imagebump "), []byte(bin+" "))
				p := filepath.Join(dir, u)
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, p)
			}
			if _, stderr, err := runCmd(analyze, append([]string{"verify", "--man=no"}, args...)...); err != nil || stderr != "" {
				t.Errorf("systemd-analyze verify: %v\n%s", err, stderr)
			}

			unit := parseUnit(t, service)
			exec := unit["Service/ExecStart"]
			if len(exec) != 1 || !strings.HasPrefix(exec[0], "/usr/local/bin/imagebump "+tt.command+" -c /etc/imagebump/imagebump.yaml ") {
				t.Errorf("ExecStart = %q, want imagebump %s with the config", exec, tt.command)
			}
			loaded := map[string]bool{}
			for _, lc := range unit["Service/LoadCredential"] {
				name, _, _ := strings.Cut(lc, ":")
				loaded[credentialsDir+name] = true
			}
			for _, s := range secretPaths(cfg, tt.command) {
				if !loaded[s] {
					t.Errorf("the config reads %s, which no LoadCredential= of %s provides", s, tt.dir)
				}
			}
			// Registries the config does not list read the same file, as
			// Docker's config.json, as on Kubernetes (DOCKER_CONFIG).
			if !loaded[credentialsDir+"config.json"] || !slices.Contains(unit["Service/Environment"], "DOCKER_CONFIG=%d") {
				t.Errorf("%s: no config.json credential with DOCKER_CONFIG=%%d (environment %q)", tt.dir, unit["Service/Environment"])
			}
			for key, want := range map[string]string{"DynamicUser": "yes", "ProtectSystem": "strict", "StateDirectory": "imagebump", "NoNewPrivileges": "yes"} {
				if got := unit["Service/"+key]; !slices.Equal(got, []string{want}) {
					t.Errorf("%s = %q, want %s", key, got, want)
				}
			}
			// The status page and /metrics take no credentials: on a VM
			// they stay on loopback, behind a proxy for webhooks.
			if listen := regexp.MustCompile(`--listen[ =](\S+)`).FindStringSubmatch(exec[0]); listen != nil && !strings.HasPrefix(listen[1], "127.0.0.1:") {
				t.Errorf("ExecStart listens on %s, want 127.0.0.1 (loopback) only", listen[1])
			}
			if !strings.Contains(exec[0], " --workdir /var/lib/imagebump") {
				t.Errorf("ExecStart %q does not keep the working copies in the StateDirectory", exec[0])
			}
		})
	}
}

// TestCompose checks docker-compose.yaml (the keys it uses, decoded
// strictly) and that the config it mounts reads its secrets where Compose
// puts them.
func TestCompose(t *testing.T) {
	type service struct {
		Image           string            `yaml:"image"`
		Command         []string          `yaml:"command"`
		Restart         string            `yaml:"restart"`
		StopGracePeriod string            `yaml:"stop_grace_period"`
		User            string            `yaml:"user"`
		ReadOnly        bool              `yaml:"read_only"`
		CapDrop         []string          `yaml:"cap_drop"`
		SecurityOpt     []string          `yaml:"security_opt"`
		Tmpfs           []string          `yaml:"tmpfs"`
		Ports           []string          `yaml:"ports"`
		Volumes         []string          `yaml:"volumes"`
		Secrets         []string          `yaml:"secrets"`
		MemLimit        string            `yaml:"mem_limit"`
		Logging         map[string]any    `yaml:"logging"`
		Environment     map[string]string `yaml:"environment"`
	}
	var compose struct {
		Name     string             `yaml:"name"`
		Services map[string]service `yaml:"services"`
		Secrets  map[string]struct {
			File string `yaml:"file"`
		} `yaml:"secrets"`
		Volumes map[string]struct{} `yaml:"volumes"`
	}
	const dir = "deploy/vm/compose"
	if err := decodeStrict(readFile(t, dir+"/docker-compose.yaml"), &compose); err != nil {
		t.Fatalf("docker-compose.yaml: %v", err)
	}
	s, ok := compose.Services["imagebump"]
	if !ok {
		t.Fatal("no service imagebump")
	}
	if s.User != "65532:65532" || !s.ReadOnly || !slices.Equal(s.CapDrop, []string{"ALL"}) || !slices.Contains(s.SecurityOpt, "no-new-privileges:true") {
		t.Errorf("service is not locked down: user %q, read_only %v, cap_drop %q, security_opt %q", s.User, s.ReadOnly, s.CapDrop, s.SecurityOpt)
	}
	if len(s.Command) == 0 || s.Command[0] != "serve" {
		t.Errorf("command %q, want serve", s.Command)
	}
	checkArgs(t, s.Command)
	var configMount string
	for _, v := range s.Volumes {
		src, dst, _ := strings.Cut(v, ":")
		dst = strings.TrimSuffix(dst, ":ro")
		if dst == "/etc/imagebump/imagebump.yaml" {
			configMount = src
		} else if _, named := compose.Volumes[src]; !named {
			t.Errorf("volume %q is neither the config nor a named volume", v)
		}
	}
	if configMount == "" {
		t.Fatal("the config is not mounted at /etc/imagebump/imagebump.yaml")
	}
	if dir, ok := s.Environment["DOCKER_CONFIG"]; !ok || dir != "/run/secrets" || !slices.Contains(s.Secrets, "config.json") || compose.Secrets["config.json"].File == "" {
		t.Errorf("DOCKER_CONFIG %q, secrets %q: want /run/secrets holding config.json, for the registries the config does not list", dir, s.Secrets)
	}
	cfg := loadConfig(t, path.Join(dir, configMount))
	for _, p := range secretPaths(cfg, s.Command[0]) {
		name, ok := strings.CutPrefix(p, "/run/secrets/")
		if !ok || !slices.Contains(s.Secrets, name) {
			t.Errorf("the config reads %s, which is not a secret of the service (%q)", p, s.Secrets)
		}
		if _, ok := compose.Secrets[name]; !ok {
			t.Errorf("secret %q is not declared", name)
		}
	}
}

// TestCrontab checks the crontab line: a five-field schedule and a command
// imagebump accepts.
func TestCrontab(t *testing.T) {
	var lines []string
	for line := range strings.Lines(string(readFile(t, "deploy/vm/crontab"))) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			lines = append(lines, line)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("crontab has %d entries, want 1", len(lines))
	}
	f := strings.Fields(lines[0])
	if diff := cmp.Diff(f[:5], []string{"*/5", "*", "*", "*", "*"}); diff != "" {
		t.Errorf("schedule (-got +want):\n%s", diff)
	}
	i := slices.Index(f, "/usr/local/bin/imagebump")
	j := slices.IndexFunc(f, func(s string) bool { return strings.HasPrefix(s, ">") })
	if i < 0 || j < i {
		t.Fatalf("crontab line %q does not run /usr/local/bin/imagebump with its output redirected", lines[0])
	}
	checkArgs(t, f[i+1:j])
}

// runCmd runs a program and returns its standard output and error.
func runCmd(name string, args ...string) (string, string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), strings.TrimSpace(stderr.String()), err
}

// parseUnit reads a systemd unit file into "Section/Key" -> values.
func parseUnit(t *testing.T, p string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	section := ""
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: line %q is not KEY=VALUE", p, line)
			}
			out[section+"/"+k] = append(out[section+"/"+k], v)
		}
	}
	return out
}

// loadConfig parses an imagebump config of the repository as imagebump
// would (no I/O beyond reading it).
func loadConfig(t *testing.T, rel string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(readFile(t, rel), rel)
	if err != nil {
		t.Fatalf("%s does not load: %v", rel, err)
	}
	return cfg
}

// secretPaths returns every secret or credential file the config names
// that command (run or serve) reads, sorted and without duplicates: only
// serve reads the webhooks' secrets.
func secretPaths(cfg *config.Config, command string) []string {
	var out []string
	add := func(ps ...string) {
		for _, p := range ps {
			if p != "" && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	for _, r := range cfg.Registries {
		if r.Auth != nil {
			add(r.Auth.DockerConfig, r.Auth.UsernameFile, r.Auth.PasswordFile, r.Auth.TokenFile)
		}
	}
	for _, tg := range cfg.Targets() {
		if tg.Git != nil && tg.Git.Auth != nil {
			a := tg.Git.Auth
			add(a.TokenFile, a.UsernameFile, a.PasswordFile, a.SSHKeyFile, a.SSHKeyPassphraseFile, a.KnownHostsFile)
		}
		if tg.Commit != nil {
			add(tg.Commit.SigningKeyFile, tg.Commit.SigningPassphraseFile)
		}
		if tg.Push != nil && tg.Push.PullRequest != nil {
			add(tg.Push.PullRequest.TokenFile)
		}
	}
	if command == "serve" {
		for _, h := range cfg.Webhooks {
			add(h.SecretFile, h.TokenFile)
		}
	}
	slices.Sort(out)
	return out
}
