package flux

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNotesOncePerObject checks that a note about an object's setting is
// made once, however many objects use it, and also when none does: two
// ImagePolicies on one ImageRepository, two automations on one
// GitRepository, and a repository and a GitRepository nothing uses.
func TestNotesOncePerObject(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "f.yaml", `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: apps}
spec: {image: 123456789012.dkr.ecr.eu-west-1.amazonaws.com/acme/app, provider: aws, secretRef: {name: pull}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: stable, namespace: apps}
spec: {imageRepositoryRef: {name: app}, policy: {semver: {range: ">=1.0.0"}}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: next, namespace: apps}
spec: {imageRepositoryRef: {name: app}, policy: {semver: {range: ">=2.0.0-0"}}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: unused, namespace: apps}
spec: {image: quay.io/acme/unused, provider: gcp}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: apps}
spec: {url: "https://git.example.com/fleet.git", provider: azure, ref: {branch: main}, secretRef: {name: git}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: idle, namespace: apps}
spec: {url: "https://git.example.com/idle.git", provider: github}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: prod, namespace: apps}
spec:
  interval: 10m
  sourceRef: {kind: GitRepository, name: fleet}
  git: {commit: {author: {email: bot@example.com}}}
  update: {path: ./prod}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: staging, namespace: apps}
spec:
  interval: 10m
  sourceRef: {kind: GitRepository, name: fleet}
  git: {commit: {author: {email: bot@example.com}}}
  update: {path: ./staging}
`)
	set, err := Load(context.Background(), []string{dir}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := set.Native(NativeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, note := range n.Report.Notes {
		count[note.Object.Ref()+" "+note.Field+": "+note.Msg]++
	}
	for k, c := range count {
		if c > 1 {
			t.Errorf("%d times: %s", c, k)
		}
	}
	for _, want := range []string{
		"ImageRepository apps/app spec.secretRef: Secret apps/pull is not used: with provider aws",
		"ImageRepository apps/unused : no ImagePolicy uses it",
		"GitRepository apps/fleet spec.provider: provider \"azure\"",
		"GitRepository apps/fleet spec.secretRef: Secret apps/git is not mapped",
		"GitRepository apps/idle spec.provider: provider \"github\"",
		"GitRepository apps/idle : no ImageUpdateAutomation uses it",
	} {
		found := false
		for k := range count {
			if strings.HasPrefix(k, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("no note %q", want)
		}
	}
	if t.Failed() {
		var b strings.Builder
		_ = n.Report.WriteText(&b)
		t.Log(b.String())
	}
}

// TestSecretPathsKeepTheirSpelling checks that the native config names the
// Secrets' files as the user did: a path the mapping gives relative (to
// the mapping's folder) or a relative folder of Secrets is written
// relative to the native config's folder, an absolute one as it is; and
// that the config read from it names the same files, absolute.
func TestSecretPathsKeepTheirSpelling(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	writeFile(t, root, "clusters/objects.yaml", `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: apps}
spec: {image: ghcr.io/acme/app, secretRef: {name: pull}, certSecretRef: {name: ca}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: app, namespace: apps}
spec: {imageRepositoryRef: {name: app}, policy: {semver: {range: ">=1.0.0"}}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: apps}
spec: {url: "https://git.example.com/fleet.git", interval: 1m, ref: {branch: main}, secretRef: {name: git}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: apps, namespace: apps}
spec:
  interval: 10m
  sourceRef: {kind: GitRepository, name: fleet}
  git: {commit: {author: {email: bot@example.com}}}
`)
	abs := filepath.Join(root, "abs", "ca.crt")
	writeFile(t, root, "ops/secrets.yaml", "apps/pull:\n  .dockerconfigjson: docker/config.json\napps/ca:\n  ca.crt: "+abs+"\n")
	writeFile(t, root, "mounted/apps/git/username", "bot\n")
	writeFile(t, root, "mounted/apps/git/password", "pw\n")
	set, err := Load(context.Background(), []string{"clusters"}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		file    string // the native config
		secrets func(t *testing.T) *Secrets
		want    []string // in its YAML
	}{
		{"imagebump.yaml", mappedSecrets, []string{"dockerConfig: ops/docker/config.json", "caFile: " + abs}},
		{"deploy/imagebump.yaml", mappedSecrets, []string{"dockerConfig: ../ops/docker/config.json", "caFile: " + abs}},
		{"imagebump.yaml", mountedSecrets, []string{"usernameFile: mounted/apps/git/username", "passwordFile: mounted/apps/git/password"}},
		{"deploy/imagebump.yaml", mountedSecrets, []string{"usernameFile: ../mounted/apps/git/username"}},
	} {
		n, err := set.Native(NativeOptions{Secrets: tt.secrets(t), File: tt.file})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range tt.want {
			if !strings.Contains(string(n.YAML), want) {
				t.Errorf("%s: YAML lacks %q:\n%s", tt.file, want, n.YAML)
			}
		}
		c := n.Config
		switch {
		case c.Registries[0].Auth != nil && c.Registries[0].Auth.DockerConfig != filepath.Join(root, "ops/docker/config.json"):
			t.Errorf("%s: config's dockerConfig = %q", tt.file, c.Registries[0].Auth.DockerConfig)
		case c.Registries[0].CAFile != "" && c.Registries[0].CAFile != abs:
			t.Errorf("%s: config's caFile = %q", tt.file, c.Registries[0].CAFile)
		case c.TargetList[0].Git.Auth != nil && c.TargetList[0].Git.Auth.UsernameFile != filepath.Join(root, "mounted/apps/git/username"):
			t.Errorf("%s: config's usernameFile = %q", tt.file, c.TargetList[0].Git.Auth.UsernameFile)
		}
		if c.File != tt.file {
			t.Errorf("config's File = %q, want %q", c.File, tt.file)
		}
	}
}

func mappedSecrets(t *testing.T) *Secrets {
	s, err := LoadSecrets("ops/secrets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mountedSecrets(*testing.T) *Secrets { return &Secrets{Dir: "mounted"} }

// TestExclusionListOfDefaults checks how an exclusionList maps: it
// replaces the defaults, as in Flux, unless it starts with imagebump's
// defaults (as flux generate writes them), which is the same as adding the
// rest to the defaults.
func TestExclusionListOfDefaults(t *testing.T) {
	for _, tt := range []struct {
		name, list  string
		wantExclude []string
		wantReplace bool
	}{
		{"Flux's default alone", `['^.*\.sig$']`, []string{`^.*\.sig$`}, true},
		{"imagebump's defaults", `['^.*\.sig$', '^.*\.att$', '^.*\.sbom$']`, nil, false},
		{"imagebump's defaults and more", `['^.*\.sig$', '^.*\.att$', '^.*\.sbom$', '-debug$']`, []string{"-debug$"}, false},
		{"the defaults in another order", `['^.*\.att$', '^.*\.sig$', '^.*\.sbom$']`, []string{`^.*\.att$`, `^.*\.sig$`, `^.*\.sbom$`}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "f.yaml", `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: apps}
spec: {image: ghcr.io/acme/app, exclusionList: `+tt.list+`}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: app, namespace: apps}
spec: {imageRepositoryRef: {name: app}, policy: {alphabetical: {}}}
`)
			set, err := Load(context.Background(), []string{dir}, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n, err := set.Native(NativeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			im := n.Config.Images[0]
			if !slices.Equal(im.Exclude, tt.wantExclude) || im.ExcludeReplacesDefaults != tt.wantReplace {
				t.Errorf("exclude = %q, replaces the defaults: %v; want %q, %v", im.Exclude, im.ExcludeReplacesDefaults, tt.wantExclude, tt.wantReplace)
			}
		})
	}
}

// TestAutomationPushAndInterval checks what an automation's push and
// interval map to where imagebump differs from Flux or Flux refuses the
// object.
func TestAutomationPushAndInterval(t *testing.T) {
	objects := func(spec string) string {
		return `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: apps}
spec: {url: "https://git.example.com/fleet.git", interval: 1m, ref: {branch: main}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: auto, namespace: apps}
spec:
  sourceRef: {kind: GitRepository, name: fleet}
  git:
    commit: {author: {email: bot@example.com}}
` + spec
	}
	for _, tt := range []struct {
		name, spec string
		wantNote   string // a note on spec.git.push.refspec, at line 13
		wantErr    string
	}{
		// As Flux, imagebump pushes the checkout branch, then the
		// refspec: nothing to note.
		{"refspec alone", "    push: {refspec: 'HEAD:refs/for/main'}\n  interval: 5m\n", "", ""},
		{"refspec and the checkout branch", "    push: {branch: main, refspec: 'refs/heads/main:refs/for/main'}\n  interval: 5m\n", "", ""},
		{"refspec and a branch of its own", "    push: {branch: auto, refspec: 'refs/heads/auto:refs/for/main'}\n  interval: 5m\n", "", ""},
		{"no interval", "    push: {branch: auto}\n", "", "f.yaml:6: ImageUpdateAutomation apps/auto: spec.interval: missing or not positive: Flux requires an interval"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "f.yaml", objects(tt.spec))
			set, err := Load(context.Background(), []string{dir}, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n, err := set.Native(NativeOptions{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""), tt.wantErr) {
					t.Errorf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for _, note := range n.Report.Notes {
				if note.Field == "spec.git.push.refspec" {
					if note.Line != 13 || note.Level != Warning {
						t.Errorf("note at line %d, level %v", note.Line, note.Level)
					}
					got = note.Msg
				}
			}
			if tt.wantNote == "" && got != "" || !strings.Contains(got, tt.wantNote) {
				t.Errorf("refspec note = %q, want %q", got, tt.wantNote)
			}
		})
	}
}

// TestInsecureHostAnyOrder: an insecure ImageRepository makes its host
// plain HTTP for every repository on it, and each secure one on that
// host is warned about, whichever comes first in the files; a host set
// by a cloud provider alone names its source in the export's comment.
func TestInsecureHostAnyOrder(t *testing.T) {
	repo := func(name string, insecure bool) string {
		return fmt.Sprintf(`apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: %s, namespace: apps}
spec: {image: registry.fleet.test/acme/%s, insecure: %t}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: %s, namespace: apps}
spec: {imageRepositoryRef: {name: %s}, policy: {semver: {range: ">=1.0.0"}}}
---
`, name, name, insecure, name, name)
	}
	const cloud = `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: ecr, namespace: apps}
spec: {image: 123456789012.dkr.ecr.eu-west-1.amazonaws.com/acme/app, provider: aws}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: ecr, namespace: apps}
spec: {imageRepositoryRef: {name: ecr}, policy: {semver: {range: ">=1.0.0"}}}
`
	for _, tt := range []struct{ name, files string }{
		{"insecure first", repo("a", true) + repo("b", false) + cloud},
		{"insecure last", repo("b", false) + repo("a", true) + cloud},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n, err := loadText(t, tt.files).Native(NativeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var warned []string
			for _, note := range n.Report.Notes {
				if note.Field == "spec.insecure" && strings.Contains(note.Msg, "allows plain HTTP") {
					warned = append(warned, note.Object.Ref())
				}
			}
			if !slices.Equal(warned, []string{"ImageRepository apps/b"}) {
				t.Errorf("plain-HTTP warnings for %v, want the secure repository apps/b alone", warned)
			}
			for _, r := range n.Config.Registries {
				if r.Host == "registry.fleet.test" && !r.Insecure {
					t.Errorf("host %s is not insecure", r.Host)
				}
			}
			if !strings.Contains(string(n.YAML), "# from ImageRepository apps/ecr") || strings.Contains(string(n.YAML), "# from \n") {
				t.Errorf("the export does not name the cloud host's source:\n%s", n.YAML)
			}
		})
	}
}

// TestObjectRef: a Flux object is named with its namespace, an entry of
// imagebump's own config (which has none) without a stray slash.
func TestObjectRef(t *testing.T) {
	for _, tt := range []struct {
		o    Object
		want string
	}{
		{Object{Kind: "ImagePolicy", Namespace: "apps", Name: "web"}, "ImagePolicy apps/web"},
		{Object{Kind: "target", Name: "default"}, "target default"},
	} {
		if got := tt.o.Ref(); got != tt.want {
			t.Errorf("Ref() = %q, want %q", got, tt.want)
		}
	}
}

// TestUnmappedGitSecret checks what a GitRepository's Secret that is not
// mapped does, by URL and by whether the command uses Git: with an ssh
// URL it is an error only where Git is used (run, serve, plan without a
// checkout); where it is not (validate, plan --repo, flux export), a
// warning says what run and serve will need, and the config, which must
// still load, names placeholder files for the keys. With https it is a
// warning either way, and the config names no credentials.
func TestUnmappedGitSecret(t *testing.T) {
	objects := func(url string) string {
		return `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata: {name: app, namespace: flux-system}
spec: {image: ghcr.io/acme/app}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: app, namespace: flux-system}
spec: {imageRepositoryRef: {name: app}, policy: {semver: {range: ">=1.0.0"}}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {url: "` + url + `", interval: 1m, ref: {branch: main}, secretRef: {name: flux-system}}
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: flux-system, namespace: flux-system}
spec:
  interval: 30m
  sourceRef: {kind: GitRepository, name: flux-system}
  git: {commit: {author: {email: bot@example.com}}}
`
	}
	const (
		ssh   = "ssh://git@github.com/acme/fleet"
		https = "https://github.com/acme/fleet.git"
	)
	tests := []struct {
		name, url string
		noGit     bool
		// wantErr is the start of the error, when there is one; else
		// wantNote starts the warning and wantKey, wantHosts are the
		// config's sshKeyFile and knownHostsFile, relative to its folder.
		wantErr, wantNote, wantKey, wantHosts string
	}{
		{name: "ssh, Git used", url: ssh,
			wantErr: "f.yaml:14: GitRepository flux-system/flux-system: spec.secretRef: Secret flux-system/flux-system is not mapped, and an ssh URL needs its identity and known_hosts"},
		{name: "ssh, no Git", url: ssh, noGit: true,
			wantNote: "Secret flux-system/flux-system is not mapped: not needed here, as Git is not used, but run and serve need its identity and known_hosts",
			wantKey:  "unmapped-secret/flux-system/flux-system/identity", wantHosts: "unmapped-secret/flux-system/flux-system/known_hosts"},
		{name: "https, Git used", url: https,
			wantNote: "Secret flux-system/flux-system is not mapped: Git is used without credentials"},
		{name: "https, no Git", url: https, noGit: true,
			wantNote: "Secret flux-system/flux-system is not mapped: not needed here, as Git is not used, but run and serve would use Git without credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "f.yaml", objects(tt.url))
			set, err := Load(context.Background(), []string{dir}, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "imagebump.yaml")
			n, err := set.Native(NativeOptions{File: file, NoGit: tt.noGit})
			if tt.wantErr != "" {
				if err == nil {
					t.Fatal("Native succeeded")
				}
				if got := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""); !strings.HasPrefix(got, tt.wantErr) {
					t.Errorf("error:\n got %s\nwant %s", got, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var notes []string
			for _, note := range n.Report.Notes {
				if note.Field == "spec.secretRef" {
					notes = append(notes, fmt.Sprintf("%s %s", note.Level, note.Msg))
				}
			}
			if len(notes) != 1 || !strings.HasPrefix(notes[0], "warning "+tt.wantNote) {
				t.Errorf("secretRef notes: %q, want one warning %q", notes, tt.wantNote)
			}
			targets := n.Config.Targets()
			if len(targets) != 1 {
				t.Fatalf("%d targets, want 1", len(targets))
			}
			var gotKey, gotHosts string
			if a := targets[0].Git.Auth; a != nil {
				gotKey, gotHosts = a.SSHKeyFile, a.KnownHostsFile
			}
			rel := func(p string) string {
				if p == "" {
					return ""
				}
				r, err := filepath.Rel(dir, p)
				if err != nil {
					t.Fatal(err)
				}
				return filepath.ToSlash(r)
			}
			if rel(gotKey) != tt.wantKey || rel(gotHosts) != tt.wantHosts {
				t.Errorf("sshKeyFile, knownHostsFile = %q, %q; want %q, %q", rel(gotKey), rel(gotHosts), tt.wantKey, tt.wantHosts)
			}
			if tt.wantKey != "" && !strings.Contains(string(n.YAML), "sshKeyFile: "+tt.wantKey+"\n") {
				t.Errorf("the YAML does not name %s:\n%s", tt.wantKey, n.YAML)
			}
		})
	}
}

// TestLoadSecretsErrors checks that each problem of a secrets mapping is
// one line, FILE:LINE: message, at the entry at fault.
func TestLoadSecretsErrors(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		want       []string
	}{
		{"a list for a file", "apps/pull:\n  .dockerconfigjson: /pull.json\n  username: [a, b]\n",
			[]string{`secrets.yaml:3: apps/pull: key "username" maps to a list: give a file path or env:VARIABLE`}},
		{"each problem", "apps/pull:\n  username: [a]\n  password:\napps:\n  ca.crt: /ca.crt\napps/git: [identity]\n",
			[]string{
				`secrets.yaml:2: apps/pull: key "username" maps to a list: give a file path or env:VARIABLE`,
				`secrets.yaml:3: apps/pull: key "password" maps to nothing: give a file path or env:VARIABLE`,
				`secrets.yaml:4: "apps": name a Secret NAMESPACE/NAME`,
				`secrets.yaml:6: apps/git: its keys are a mapping {KEY: FILE or env:VARIABLE}, not a list`,
			}},
		{"a list at the top", "- apps/pull\n",
			[]string{`secrets.yaml:1: a secrets mapping is NAMESPACE/NAME: {KEY: FILE or env:VARIABLE}, not a list`}},
		{"empty", "# nothing\n",
			[]string{`secrets.yaml:1: empty: a secrets mapping is NAMESPACE/NAME: {KEY: FILE or env:VARIABLE}`}},
		{"bad env reference", "apps/git:\n  password: env:1BAD\n",
			[]string{`secrets.yaml:2: apps/git: key "password": `}},
		{"twice", "apps/git:\n  password: /a\napps/git:\n  password: /b\n",
			[]string{`secrets.yaml:3: apps/git: mapped twice: keep one entry`}},
		{"syntax", "apps/git:\n  password: /a\n   username: /b\n",
			[]string{`secrets.yaml:3: invalid YAML: mapping values are not allowed in this context`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := LoadSecrets(writeFile(t, dir, "secrets.yaml", tt.text))
			if err == nil {
				t.Fatal("LoadSecrets succeeded")
			}
			got := strings.Split(strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""), "\n")
			if len(got) != len(tt.want) {
				t.Fatalf("errors:\n%s\nwant %d lines:\n%s", strings.Join(got, "\n"), len(tt.want), strings.Join(tt.want, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("error %d:\n got %s\nwant %s", i, got[i], tt.want[i])
				}
			}
		})
	}
}
