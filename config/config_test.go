package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/imagebump/imagebump/policy"
)

// ignoreInternal ignores the fields Load derives (image index, compiled
// policies), which the tests check through methods.
var ignoreInternal = cmpopts.IgnoreUnexported(Config{}, Image{})

func defaultCommit() *Commit {
	return &Commit{Author: Author{Name: DefaultAuthorName, Email: DefaultAuthorEmail}}
}

func TestParseValid(t *testing.T) {
	for _, tt := range []struct {
		name string
		yaml string
		want *Config
	}{{
		name: "empty file",
		yaml: "",
		want: &Config{File: "imagebump.yaml"},
	}, {
		name: "comments only",
		yaml: "# nothing yet\n---\n",
		want: &Config{File: "imagebump.yaml"},
	}, {
		name: "minimal",
		yaml: `
images:
  - name: app
    repository: ghcr.io/acme/app
    policy: {semver: ">=1.0.0"}
`,
		want: &Config{
			File: "imagebump.yaml",
			Images: []Image{{
				Name:       "default:app",
				Repository: "ghcr.io/acme/app",
				Rule:       Rule{SemVer: ">=1.0.0"},
				Digest:     policy.DigestNever,
				Line:       3,
			}},
		},
	}, {
		name: "cloud registry providers",
		yaml: `
registries:
  - host: 123456789012.dkr.ecr.eu-west-1.amazonaws.com
    provider: aws
  - host: europe-docker.pkg.dev
    provider: auto
  - host: ghcr.io
    provider: generic
    auth: {tokenFile: /run/ghcr}
`,
		want: &Config{
			File: "imagebump.yaml",
			Registries: []Registry{
				{Host: "123456789012.dkr.ecr.eu-west-1.amazonaws.com", Provider: "aws", Line: 3},
				{Host: "europe-docker.pkg.dev", Provider: "auto", Line: 5},
				{Host: "ghcr.io", Provider: "generic", Auth: &RegistryAuth{TokenFile: "/run/ghcr"}, Line: 7},
			},
		},
	}, {
		name: "top-level target with defaults and resolved paths",
		yaml: `
registries:
  - host: ghcr.io
    auth: {usernameFile: secrets/user, passwordFile: /abs/pass}
    caFile: ca.pem
    rateLimit: {requestsPerSecond: 2.5}
images:
  - name: apps:web
    repository: nginx
    policy: {numerical: desc}
    filterTags: {pattern: '^main-(?P<n>[0-9]+)$', extract: '${n}'}
    exclude: ['-rc$']
    digest: always
    platform: linux/arm/v7
git:
  url: git@github.com:acme/fleet.git
  branch: main
  paths: [./clusters/prod/, apps]
  auth: {sshKeyFile: keys/id, knownHostsFile: keys/known_hosts}
push:
  branch: imagebump/main
schedule: 5m
`,
		want: &Config{
			File: "imagebump.yaml",
			Registries: []Registry{{
				Host:      "ghcr.io",
				Auth:      &RegistryAuth{UsernameFile: "secrets/user", PasswordFile: "/abs/pass"},
				CAFile:    "ca.pem",
				RateLimit: &RateLimit{RequestsPerSecond: 2.5},
				Line:      3,
			}},
			Images: []Image{{
				Name:       "apps:web",
				Repository: "nginx",
				Rule:       Rule{Numerical: "desc"},
				FilterTags: &FilterTags{Pattern: "^main-(?P<n>[0-9]+)$", Extract: "${n}"},
				Exclude:    []string{"-rc$"},
				Digest:     policy.DigestAlways,
				Platform:   "linux/arm/v7",
				Line:       8,
			}},
			Git: &Git{
				URL:    "git@github.com:acme/fleet.git",
				Branch: "main",
				Paths:  []string{"clusters/prod", "apps"},
				Auth:   &GitAuth{SSHKeyFile: "keys/id", KnownHostsFile: "keys/known_hosts"},
			},
			Commit:   defaultCommit(),
			Push:     &Push{Branch: "imagebump/main"},
			Schedule: "5m",
		},
	}, {
		name: "targets",
		yaml: `
images:
  - name: apps:api
    repository: ghcr.io/acme/api
    policy: {alphabetical: asc}
targets:
  - name: prod
    git: {url: https://github.com/acme/fleet.git, branch: main, auth: {tokenFile: token}}
    commit: {author: {name: bot}}
    push:
      branch: imagebump/prod
      pullRequest: {provider: github, labels: [deps]}
    schedule: "@every 10m"
    policies: ["apps:*"]
  - name: dev
    git: {url: "file:///srv/git/fleet.git"}
    schedule: "CRON_TZ=UTC 0 9-17/2 * * mon-fri"
`,
		want: &Config{
			File: "imagebump.yaml",
			Images: []Image{{
				Name:       "apps:api",
				Repository: "ghcr.io/acme/api",
				Rule:       Rule{Alphabetical: "asc"},
				Digest:     policy.DigestNever,
				Line:       3,
			}},
			TargetList: []Target{{
				Name:     "prod",
				Git:      &Git{URL: "https://github.com/acme/fleet.git", Branch: "main", Auth: &GitAuth{TokenFile: "token"}},
				Commit:   &Commit{Author: Author{Name: "bot", Email: DefaultAuthorEmail}},
				Push:     &Push{Branch: "imagebump/prod", PullRequest: &PullRequest{Provider: "github", Labels: []string{"deps"}}},
				Schedule: "@every 10m",
				Policies: []string{"apps:*"},
				Line:     7,
			}, {
				Name:     "dev",
				Git:      &Git{URL: "file:///srv/git/fleet.git"},
				Commit:   defaultCommit(),
				Schedule: "CRON_TZ=UTC 0 9-17/2 * * mon-fri",
				Line:     15,
			}},
		},
	}, {
		name: "anchors, aliases and merge keys",
		yaml: `
images:
  - &base
    name: a
    repository: nginx
    policy: {semver: "^1"}
  - <<: *base
    name: b
targets:
  - name: one
    git: &git {url: "https://example.com/fleet.git"}
  - name: two
    git: *git
    policies: [b]
`,
		want: &Config{
			File: "imagebump.yaml",
			Images: []Image{
				{Name: "default:a", Repository: "nginx", Rule: Rule{SemVer: "^1"}, Digest: policy.DigestNever, Line: 3},
				{Name: "default:b", Repository: "nginx", Rule: Rule{SemVer: "^1"}, Digest: policy.DigestNever, Line: 7},
			},
			TargetList: []Target{
				{Name: "one", Git: &Git{URL: "https://example.com/fleet.git"}, Commit: defaultCommit(), Line: 10},
				{Name: "two", Git: &Git{URL: "https://example.com/fleet.git"}, Commit: defaultCommit(), Policies: []string{"b"}, Line: 12},
			},
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.yaml), "imagebump.yaml")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(got, tt.want, ignoreInternal); diff != "" {
				t.Errorf("Parse (-got +want):\n%s", diff)
			}
			for i := range got.Images {
				if got.Images[i].Policy() == nil {
					t.Errorf("Images[%d].Policy() = nil, want a compiled policy", i)
				}
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	// Each row holds one mistake; want is the one error Parse must return:
	// its exact position and path, and a phrase of its message.
	for _, tt := range []struct {
		name   string
		yaml   string
		want   string // "file:line:col: path:" prefix
		phrase string
	}{
		// Strictness.
		{"unknown key", `
images:
  - name: app
    repository: nginx
    policy: {semvar: ">=1"}
`, "imagebump.yaml:5:14: images[0].policy:", `unknown key "semvar" (did you mean "semver"?)`},
		{"unknown top-level key", `
image:
  - name: app
`, "imagebump.yaml:2:1:", `unknown key "image" (did you mean "images"?)`},
		{"duplicate key", `
registries:
  - host: ghcr.io
    insecure: true
    host: quay.io
`, "imagebump.yaml:5:5: registries[0]:", `duplicate key "host" (first at line 3)`},
		{"string for integer", `
registries:
  - host: ghcr.io
    concurrency: "8"
`, "imagebump.yaml:4:18: registries[0].concurrency:", "expected an integer, got a string"},
		{"fraction for integer", `
registries:
  - host: ghcr.io
    concurrency: 1.5
`, "imagebump.yaml:4:18: registries[0].concurrency:", "expected an integer, got a number"},
		{"yes is not a boolean", `
registries:
  - host: ghcr.io
    insecure: yes
`, "imagebump.yaml:4:15: registries[0].insecure:", "expected a boolean (true or false), got a string"},
		{"number for string", `
images:
  - name: app
    repository: nginx
    policy: {semver: 1}
`, "imagebump.yaml:5:22: images[0].policy.semver:", "expected a string, got an integer (quote it)"},
		{"scalar for list", `
images:
  - name: app
    repository: nginx
    policy: {semver: ">=1"}
    exclude: '-rc$'
`, "imagebump.yaml:6:14: images[0].exclude:", "expected a list, got a string"},
		{"list for mapping", `
git: [https://example.com/fleet.git]
`, "imagebump.yaml:2:6: git:", "expected a mapping, got a list"},
		{"no value", `
images:
  - name: app
    repository: nginx
    policy: {semver: ">=1"}
    digest:
`, "imagebump.yaml:6:12: images[0].digest:", "no value"},
		{"empty string", `
images:
  - name: app
    repository: nginx
    policy: {semver: ">=1"}
    platform: ""
`, "imagebump.yaml:6:15: images[0].platform:", "empty string"},
		{"not finite", `
registries:
  - host: ghcr.io
    rateLimit: {requestsPerSecond: .inf}
`, "imagebump.yaml:4:36: registries[0].rateLimit.requestsPerSecond:", "expected a finite number"},
		{"root is a list", `
- name: app
`, "imagebump.yaml:2:1:", "expected a mapping, got a list"},
		{"syntax error", `
images:
  - name: app: web
`, "imagebump.yaml:3:", "invalid YAML: mapping values are not allowed in this context"},
		{"unknown anchor", `
images:
  - name: app
    repository: *repo
`, "imagebump.yaml:4:", "invalid YAML: unknown anchor 'repo' referenced"},
		// yaml.v3 says not where; the first byte that is not UTF-8 does.
		{"not UTF-8", "\nimages:\n  - name: app\n    repository: caf\xe9\n", "imagebump.yaml:4:", "(byte 0xe9): the file must be UTF-8"},
		{"two documents", `
images: []
---
git: {url: "https://example.com/x.git"}
`, "imagebump.yaml:3:1:", "one YAML document"},
		{"two documents with an empty one between", `
images: []
---
# nothing
---
git: {url: "https://example.com/x.git"}
`, "imagebump.yaml:5:1:", "one YAML document; found another: join the two, or put the second in a file of its own"},

		// Images.
		{"image name missing", `
images:
  - repository: nginx
    policy: {semver: ">=1"}
`, "imagebump.yaml:3:5: images[0]:", `missing required key "name"`},
		{"image name uppercase", `
images:
  - name: apps:App
    repository: nginx
    policy: {semver: ">=1"}
`, "imagebump.yaml:3:11: images[0].name:", `name "App" must be a lowercase RFC 1123 subdomain`},
		{"image namespace with a dot", `
images:
  - name: my.apps:app
    repository: nginx
    policy: {semver: ">=1"}
`, "imagebump.yaml:3:11: images[0].name:", `namespace "my.apps" must be a lowercase RFC 1123 label`},
		{"image name duplicate across spellings", `
images:
  - name: app
    repository: nginx
    policy: {semver: ">=1"}
  - name: default:app
    repository: nginx
    policy: {semver: ">=2"}
`, "imagebump.yaml:6:11: images[1].name:", `duplicate image "default:app" (first at line 3)`},
		// A repeated entry is placed at the alias, not at the entry it repeats.
		{"image duplicate by alias", `
images:
  - &app
    name: app
    repository: nginx
    policy: {semver: ">=1"}
  - *app
`, "imagebump.yaml:7:5: images[1].name:", `duplicate image "default:app" (first at line 4)`},
		{"repository missing", `
images:
  - name: app
    policy: {semver: ">=1"}
`, "imagebump.yaml:3:5: images[0]:", `missing required key "repository"`},
		{"repository with tag", `
images:
  - name: app
    repository: ghcr.io/acme/app:1.0
    policy: {semver: ">=1"}
`, "imagebump.yaml:4:17: images[0].repository:", "has a tag"},
		{"repository with digest", `
images:
  - name: app
    repository: ghcr.io/acme/app@sha256:0000000000000000000000000000000000000000000000000000000000000000
    policy: {semver: ">=1"}
`, "imagebump.yaml:4:17: images[0].repository:", "has a digest"},
		// Credentials are never quoted back (the loop checks s3cr3t).
		{"repository with credentials", `
images:
  - name: app
    repository: "bob:s3cr3tP4ss@127.0.0.1:5055/private/app"
    policy: {semver: ">=1"}
`, "imagebump.yaml:4:17: images[0].repository:", "holds a user name or password before the host"},
		{"repository with credentials and a slash in the password", `
images:
  - name: app
    repository: "https://bob:s3cr3t/x@ghcr.io/acme/app"
    policy: {semver: ">=1"}
`, "imagebump.yaml:4:17: images[0].repository:", "holds a user name or password before the host"},
		{"repository uppercase", `
images:
  - name: app
    repository: ghcr.io/Acme/app
    policy: {semver: ">=1"}
`, "imagebump.yaml:4:17: images[0].repository:", "invalid repository"},
		{"policy missing", `
images:
  - name: app
    repository: nginx
`, "imagebump.yaml:3:5: images[0]:", `missing required key "policy"`},
		{"policy empty", `
images:
  - name: app
    repository: nginx
    policy: {}
`, "imagebump.yaml:5:13: images[0].policy:", "set exactly one of semver, alphabetical, numerical"},
		{"two policy kinds", `
images:
  - name: app
    repository: nginx
    policy:
      semver: ">=1"
      numerical: asc
`, "imagebump.yaml:7:7: images[0].policy:", "found semver and numerical"},
		{"bad semver range", `
images:
  - name: app
    repository: nginx
    policy: {semver: ">=1 <<2"}
`, "imagebump.yaml:5:22: images[0].policy.semver:", `invalid range ">=1 <<2": improper constraint`},
		{"bad order", `
images:
  - name: app
    repository: nginx
    policy: {numerical: ascending}
`, "imagebump.yaml:5:25: images[0].policy.numerical:", `"ascending" is not one of asc, desc`},
		{"bad filter pattern", `
images:
  - name: app
    repository: nginx
    policy: {semver: ">=1"}
    filterTags: {pattern: '^v(.*$'}
`, "imagebump.yaml:6:27: images[0].filterTags.pattern:", `invalid pattern "^v(.*$": error parsing regexp`},
		{"extract names a missing group", `
images:
  - name: app
    repository: nginx
    policy: {alphabetical: asc}
    filterTags:
      pattern: '^RELEASE\.(?P<ts>.*)Z$'
      extract: '$tz'
`, "imagebump.yaml:8:16: images[0].filterTags.extract:", `invalid template "$tz": pattern has no group named "tz"`},
		{"extract names a missing group number", `
images:
  - name: app
    repository: nginx
    policy: {alphabetical: asc}
    filterTags: {pattern: '^v(.*)$', extract: 'x${2}'}
`, "imagebump.yaml:6:47: images[0].filterTags.extract:", `pattern has no group 2 (it has 1)`},
		{"extract without pattern", `
images:
  - name: app
    repository: nginx
    policy: {alphabetical: asc}
    filterTags: {extract: '$1'}
`, "imagebump.yaml:6:18: images[0].filterTags:", "extract needs pattern"},
		{"bad exclude", `
images:
  - name: app
    repository: nginx
    policy: {semver: ">=1"}
    exclude: ['^ok$', '[z-a]']
`, "imagebump.yaml:6:23: images[0].exclude[1]:", "invalid pattern"},
		{"bad digest mode", `
images:
  - name: app
    repository: nginx
    policy: {semver: ">=1"}
    digest: IfNotPresent
`, "imagebump.yaml:6:13: images[0].digest:", `"IfNotPresent" is not one of always, ifNotPresent, never`},
		{"bad platform", `
images:
  - name: app
    repository: nginx
    policy: {semver: ">=1"}
    platform: linux/amd64/v8/x
`, "imagebump.yaml:6:15: images[0].platform:", "is not os/arch[/variant]"},
		{"uppercase platform", `
images:
  - name: app
    repository: nginx
    policy: {semver: ">=1"}
    platform: Linux/amd64
`, "imagebump.yaml:6:15: images[0].platform:", `"Linux" is not a lowercase os`},

		// Registries.
		{"host missing", `
registries:
  - insecure: true
`, "imagebump.yaml:3:5: registries[0]:", `missing required key "host"`},
		{"host with scheme", `
registries:
  - host: https://ghcr.io
`, "imagebump.yaml:3:11: registries[0].host:", "has a scheme"},
		{"host with path", `
registries:
  - host: ghcr.io/acme
`, "imagebump.yaml:3:11: registries[0].host:", "has a path"},
		{"host with credentials", `
registries:
  - host: "bob:s3cr3tP4ss@127.0.0.1:5055"
`, "imagebump.yaml:3:11: registries[0].host:", "holds a user name or password before the host"},
		{"host URL with credentials", `
registries:
  - host: https://bob:s3cr3tP4ss@ghcr.io
`, "imagebump.yaml:3:11: registries[0].host:", "holds a user name or password before the host"},
		{"host duplicate through docker.io alias", `
registries:
  - host: index.docker.io
  - host: docker.io
`, "imagebump.yaml:4:11: registries[1].host:", `duplicate registry "docker.io" (first at line 3)`},
		{"host duplicate by alias of the value", `
registries:
  - host: &h ghcr.io
  - host: *h
`, "imagebump.yaml:4:11: registries[1].host:", `duplicate registry "ghcr.io" (first at line 3)`},
		{"platform without digest", `
images:
  - name: app
    repository: ghcr.io/acme/app
    policy: {semver: ">=1"}
    platform: linux/amd64
`, "imagebump.yaml:6:15: images[0].platform:", "only used with digest: always or ifNotPresent"},
		{"refspec from another branch", `
git: {url: "https://example.com/fleet.git", branch: main}
push:
  branch: bump
  refspec: refs/heads/other:refs/for/main
`, "imagebump.yaml:5:12: push.refspec:", `"refs/heads/other:refs/for/main": the source must name the commit imagebump makes (HEAD, branch "bump" or "main")`},
		{"empty policies", `
targets:
  - name: prod
    git: {url: "https://example.com/fleet.git"}
    policies: []
`, "imagebump.yaml:5:15: targets[0].policies:", "empty list; remove the key to apply every image policy"},
		{"host duplicate in another case", `
registries:
  - host: localhost:5055
  - host: LOCALHOST:5055
`, "imagebump.yaml:4:11: registries[1].host:", `duplicate registry "LOCALHOST:5055" (first at line 3); host names do not depend on case`},
		{"host with a port out of range", `
registries:
  - host: x.io:99999
`, "imagebump.yaml:3:11: registries[0].host:", `port 99999 is not between 1 and 65535`},
		{"a repository's port out of range", `
images:
  - {name: apps:web, repository: "127.0.0.1:99999/x", policy: {semver: ">=1"}}
`, "imagebump.yaml:3:34: images[0].repository:", `registry "127.0.0.1:99999": port 99999 is not between 1 and 65535`},
		{"a repository's port 0", `
images:
  - {name: apps:web, repository: "registry.example.com:0/x", policy: {semver: ">=1"}}
`, "imagebump.yaml:3:34: images[0].repository:", `port 0 is not between 1 and 65535`},
		{"host with an empty port", `
registries:
  - host: "ghcr.io:"
`, "imagebump.yaml:3:11: registries[0].host:", `ends with ':' and no port`},
		{"username without password", `
registries:
  - host: ghcr.io
    auth: {usernameFile: user}
`, "imagebump.yaml:4:12: registries[0].auth:", "usernameFile needs passwordFile"},
		{"password without username", `
registries:
  - host: ghcr.io
    auth:
      passwordFile: pass
`, "imagebump.yaml:5:7: registries[0].auth:", "passwordFile needs usernameFile"},
		{"two auth methods", `
registries:
  - host: ghcr.io
    auth:
      dockerConfig: config.json
      tokenFile: token
`, "imagebump.yaml:6:7: registries[0].auth:", "more than one auth method: dockerConfig and tokenFile"},
		{"unknown provider", `
registries:
  - host: ghcr.io
    provider: google
`, "imagebump.yaml:4:15: registries[0].provider:", `"google" is not one of generic, auto, aws, gcp, azure`},
		{"cloud provider with auth", `
registries:
  - host: europe-docker.pkg.dev
    auth: {tokenFile: token}
    provider: gcp
`, "imagebump.yaml:5:5: registries[0].provider:", "provider gcp and auth both give credentials; keep one"},
		{"aws on a host not ECR", `
registries:
  - host: ghcr.io
    provider: aws
`, "imagebump.yaml:4:15: registries[0].provider:", "provider aws needs an ECR host name"},
		{"gcp on another host", `
registries:
  - host: ghcr.io
    provider: gcp
`, "imagebump.yaml:4:15: registries[0].provider:", "provider gcp needs a Google host name"},
		{"azure on another host", `
registries:
  - host: localhost:5000
    provider: azure
`, "imagebump.yaml:4:15: registries[0].provider:", "provider azure needs an ACR host name"},
		{"a cloud provider over plain HTTP", `
registries:
  - host: acme.azurecr.io
    provider: azure
    insecure: true
`, "imagebump.yaml:5:15: registries[0].insecure:", "a cloud's registry never serves plain HTTP"},
		{"auto on a cloud host over plain HTTP", `
registries:
  - host: 123456789012.dkr.ecr.eu-west-1.amazonaws.com
    provider: auto
    insecure: true
`, "imagebump.yaml:5:15: registries[0].insecure:", "insecure with provider auto"},
		{"empty auth", `
registries:
  - host: ghcr.io
    auth: {}
`, "imagebump.yaml:4:11: registries[0].auth:", "set one of dockerConfig"},
		{"inline password is not a key", `
registries:
  - host: ghcr.io
    auth: {password: hunter2}
`, "imagebump.yaml:4:12: registries[0].auth:", `unknown key "password" (secrets are never inline: put it in a file and give its path in "passwordFile")`},
		{"rate not positive", `
registries:
  - host: ghcr.io
    rateLimit: {requestsPerSecond: 0}
`, "imagebump.yaml:4:36: registries[0].rateLimit.requestsPerSecond:", "must be at least 0.01 (one request every 100 seconds), got 0"},
		{"rate limit too slow", `
registries:
  - host: ghcr.io
    rateLimit: {requestsPerSecond: 1e-9}
`, "imagebump.yaml:4:36: registries[0].rateLimit.requestsPerSecond:", "must be at least 0.01"},
		{"timeout too short", `
registries:
  - host: ghcr.io
    timeout: 1ns
`, "imagebump.yaml:4:14: registries[0].timeout:", "must be at least 1s, got 1ns"},
		{"rate missing", `
registries:
  - host: ghcr.io
    rateLimit: {burst: 5}
`, "imagebump.yaml:4:16: registries[0].rateLimit:", `missing required key "requestsPerSecond"`},
		{"burst below 1", `
registries:
  - host: ghcr.io
    rateLimit: {requestsPerSecond: 1, burst: 0}
`, "imagebump.yaml:4:46: registries[0].rateLimit.burst:", "must be at least 1"},
		{"concurrency below 1", `
registries:
  - host: ghcr.io
    concurrency: 0
`, "imagebump.yaml:4:18: registries[0].concurrency:", "must be at least 1"},

		// Git.
		{"git url missing", `
git:
  branch: main
`, "imagebump.yaml:3:3: git:", `missing required key "url"`},
		{"git url scheme", `
git:
  url: ftp://example.com/fleet.git
`, "imagebump.yaml:3:8: git.url:", `scheme "ftp" is not supported`},
		{"git file url with a relative path", `
git:
  url: file://../remote.git
`, "imagebump.yaml:3:8: git.url:", `reads ".." as a host: write file:///ABSOLUTE/PATH`},
		{"git url with password", `
git:
  url: https://bot:hunter2@example.com/fleet.git
`, "imagebump.yaml:3:8: git.url:", "the URL holds a password"},
		{"git url with a token in its query", `
git:
  url: https://example.com/fleet.git?private_token=glpat-abcdef
`, "imagebump.yaml:3:8: git.url:", "the URL has a query or a fragment"},
		{"git url not a URL", `
git:
  url: fleet
`, "imagebump.yaml:3:8: git.url:", "not a Git URL"},
		{"git url scp-like with an IPv6 address", `
git:
  url: "git@[::1]:acme/fleet.git"
`, "imagebump.yaml:3:8: git.url:", "write ssh://git@[::1]/acme/fleet.git"},
		{"git url scp-like with a password", `
git:
  url: "bot:hunter2@example.com:acme/fleet.git"
`, "imagebump.yaml:3:8: git.url:", "not a Git URL"},
		{"git branch", `
git:
  url: https://example.com/fleet.git
  branch: refs/heads/main
`, "imagebump.yaml:4:11: git.branch:", "without refs/heads/"},
		{"git path outside", `
git:
  url: https://example.com/fleet.git
  paths: [apps, ../other]
`, "imagebump.yaml:4:17: git.paths[1]:", "stay inside it"},
		{"git path glob", `
git:
  url: https://example.com/fleet.git
  paths: [apps/*]
`, "imagebump.yaml:4:11: git.paths[0]:", `"apps/*": globs are not expanded: each path is a folder or a file relative to the repository root`},
		{"git path class", `
git:
  url: https://example.com/fleet.git
  paths: [apps, "clusters/[ab]"]
`, "imagebump.yaml:4:17: git.paths[1]:", "globs are not expanded"},
		{"ssh key with https", `
git:
  url: https://example.com/fleet.git
  auth: {sshKeyFile: id}
`, "imagebump.yaml:4:10: git.auth.sshKeyFile:", "needs an ssh:// or user@host:path URL"},
		{"pull request on a local repository", `
git: {url: "file:///srv/fleet.git"}
push:
  branch: imagebump
  pullRequest: {provider: gitea, tokenFile: t}
`, "imagebump.yaml:5:3: push.pullRequest:", "file:// repository has no forge"},
		{"env reference on a file-only key", `
registries:
  - host: ghcr.io
    caFile: env:CA
`, "imagebump.yaml:4:13: registries[0].caFile:", "env:NAME is only for secrets"},
		{"a GitHub token pasted as the file", `
git:
  url: https://example.com/fleet.git
  auth: {tokenFile: ghp_Sup3rS3cretValue123456}
`, "imagebump.yaml:4:21: git.auth.tokenFile:", "looks like the secret itself"},
		{"a random token pasted as the file", `
webhooks:
  - {name: hub, secretFile: 9fQ2xLr7Tz4mKp1Vb8Nc3Hd6Jw0Ys5Ua}
`, "imagebump.yaml:3:29: webhooks[0].secretFile:", "looks like the secret itself"},
		{"malformed env reference", `
git:
  url: https://example.com/fleet.git
  auth: {tokenFile: "env:"}
`, "imagebump.yaml:4:21: git.auth.tokenFile:", "not a valid environment variable reference"},
		{"ssh without known hosts", `
git:
  url: ssh://git@example.com/fleet.git
  auth: {sshKeyFile: id}
`, "imagebump.yaml:4:9: git.auth:", "needs auth.knownHostsFile"},
		{"scp-like ssh without auth", `
git:
  url: git@example.com:acme/fleet.git
`, "imagebump.yaml:3:8: git.url:", "needs auth.knownHostsFile"},
		{"token with ssh", `
git:
  url: ssh://git@example.com/fleet.git
  auth: {tokenFile: token, insecureIgnoreHostKey: true}
`, "imagebump.yaml:4:10: git.auth.tokenFile:", "needs an https:// or http:// URL"},
		{"git two auth methods", `
git:
  url: https://example.com/fleet.git
  auth: {tokenFile: token, usernameFile: u, passwordFile: p}
`, "imagebump.yaml:4:28: git.auth:", "more than one auth method: tokenFile and usernameFile with passwordFile"},
		{"known hosts and ignore host key", `
git:
  url: git@example.com:acme/fleet.git
  auth: {sshKeyFile: id, knownHostsFile: kh, insecureIgnoreHostKey: true}
`, "imagebump.yaml:4:46: git.auth:", "exclude each other"},
		{"passphrase without key", `
git:
  url: https://example.com/fleet.git
  auth: {sshKeyPassphraseFile: pp}
`, "imagebump.yaml:4:10: git.auth:", "sshKeyPassphraseFile needs sshKeyFile"},

		// Commit, push, schedule, targets.
		{"commit without git", `
commit:
  author: {name: bot}
`, "imagebump.yaml:2:1: commit:", "needs git"},
		{"author email", `
git: {url: "https://example.com/fleet.git"}
commit:
  author: {email: "Bot <bot@example.com>"}
`, "imagebump.yaml:4:19: commit.author.email:", "is not an email address"},
		{"message template", `
git: {url: "https://example.com/fleet.git"}
commit:
  messageTemplate: "{{range .Changes}}"
`, "imagebump.yaml:4:20: commit.messageTemplate:", "invalid template"},
		{"message template naming a field that does not exist", `
git: {url: "https://example.com/fleet.git"}
commit:
  messageTemplate: "Bump {{ .Nope }}"
`, "imagebump.yaml:4:20: commit.messageTemplate:", "can't evaluate field Nope"},
		{"pull request title calling an unknown function", `
git: {url: "https://example.com/fleet.git", auth: {tokenFile: t}}
push:
  branch: imagebump
  pullRequest: {provider: github, title: "{{ upper .Target }}"}
`, "imagebump.yaml:5:42: push.pullRequest.title:", "function \"upper\" not defined"},
		{"passphrase without signing key", `
git: {url: "https://example.com/fleet.git"}
commit:
  signingPassphraseFile: pp
`, "imagebump.yaml:4:3: commit:", "signingPassphraseFile needs signingKeyFile"},
		{"provider", `
git: {url: "https://example.com/fleet.git", auth: {tokenFile: t}}
push:
  branch: imagebump
  pullRequest: {provider: bitbucket}
`, "imagebump.yaml:5:27: push.pullRequest.provider:", `"bitbucket" is not one of github, gitlab, gitea`},
		{"provider missing", `
git: {url: "https://example.com/fleet.git", auth: {tokenFile: t}}
push:
  branch: imagebump
  pullRequest: {title: Bump}
`, "imagebump.yaml:5:16: push.pullRequest:", `missing required key "provider"`},
		{"pull request without push branch", `
git: {url: "https://example.com/fleet.git", auth: {tokenFile: t}}
push:
  pullRequest: {provider: gitea}
`, "imagebump.yaml:4:3: push.pullRequest:", "needs push.branch"},
		{"pull request onto its own branch", `
git: {url: "https://example.com/fleet.git", branch: main, auth: {tokenFile: t}}
push:
  branch: main
  pullRequest: {provider: gitlab}
`, "imagebump.yaml:5:3: push.pullRequest:", "a pull request needs another branch"},
		{"pull request without token", `
git: {url: "git@example.com:acme/fleet.git", auth: {sshKeyFile: id, knownHostsFile: kh}}
push:
  branch: imagebump
  pullRequest: {provider: github}
`, "imagebump.yaml:5:3: push.pullRequest:", "needs tokenFile"},
		{"api url", `
git: {url: "https://example.com/fleet.git", auth: {tokenFile: t}}
push:
  branch: imagebump
  pullRequest: {provider: gitea, apiURL: "example.com/api"}
`, "imagebump.yaml:5:42: push.pullRequest.apiURL:", "not an http:// or https:// URL"},
		{"schedule out of range", `
git: {url: "https://example.com/fleet.git"}
schedule: "0 24 * * *"
`, "imagebump.yaml:3:11: schedule:", `invalid cron expression: end of range (24) above maximum (23)`},
		{"schedule with seconds", `
git: {url: "https://example.com/fleet.git"}
schedule: "0 */5 * * * *"
`, "imagebump.yaml:3:11: schedule:", "a cron expression has 5 fields"},
		{"schedule descriptor", `
git: {url: "https://example.com/fleet.git"}
schedule: "@fortnightly"
`, "imagebump.yaml:3:11: schedule:", `unknown descriptor "@fortnightly"`},
		{"schedule duration", `
git: {url: "https://example.com/fleet.git"}
schedule: 5 minutes
`, "imagebump.yaml:3:11: schedule:", "a cron expression has 5 fields"},
		{"targets and top-level git", `
git: {url: "https://example.com/fleet.git"}
targets:
  - name: prod
    git: {url: "https://example.com/fleet.git"}
`, "imagebump.yaml:2:1: git:", "not allowed with targets"},
		{"targets empty", `
targets: []
`, "imagebump.yaml:2:10: targets:", "empty list"},
		{"target name missing", `
targets:
  - git: {url: "https://example.com/fleet.git"}
`, "imagebump.yaml:3:5: targets[0]:", `missing required key "name"`},
		{"target name duplicate", `
targets:
  - name: prod
    git: {url: "https://example.com/fleet.git"}
  - name: prod
    git: {url: "https://example.com/other.git"}
`, "imagebump.yaml:5:11: targets[1].name:", `duplicate target "prod" (first at line 3)`},
		{"target without git", `
targets:
  - name: prod
    schedule: 1h
`, "imagebump.yaml:3:5: targets[0]:", `missing required key "git"`},
		{"target glob", `
targets:
  - name: prod
    git: {url: "https://example.com/fleet.git"}
    policies: ["apps:[a-"]
`, "imagebump.yaml:5:16: targets[0].policies[0]:", "invalid glob"},
		{"merged unknown key", `
x: &common {url: "https://example.com/fleet.git"}
`, "imagebump.yaml:2:1:", `unknown key "x"`},
		// The https:// and the scp-like URL name one repository.
		{"two targets pushing one branch", `
targets:
  - name: apps
    git: {url: "https://example.com/acme/fleet.git", paths: [apps]}
    push: {branch: imagebump/main}
  - name: web
    git: {url: "git@example.com:acme/fleet", paths: [web], auth: {insecureIgnoreHostKey: true}}
    push: {branch: imagebump/main}
`, "imagebump.yaml:8:20: targets[1].push.branch:", `push.branch "imagebump/main" of this repository is also pushed by target "apps" (line 5)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "imagebump.yaml")
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != 1 {
				t.Fatalf("Parse returned %d errors, want 1:\n%v", len(lines), err)
			}
			if got := lines[0]; !strings.HasPrefix(got, tt.want+" ") || !strings.Contains(got, tt.phrase) {
				t.Errorf("Parse error:\n got %s\nwant %s ...%s...", got, tt.want, tt.phrase)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("Parse error shows the password: %v", err)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("Parse error is not an *Error: %T", err)
			}
		})
	}
}

// TestParseAllErrors checks that every problem is reported at once, in the
// order of the file.
func TestParseAllErrors(t *testing.T) {
	yaml := `
images:
  - name: App
    repository: nginx:latest
    policy: {semver: ">=1", alphabetical: asc}
registries:
  - host: ghcr.io
    concurrency: -1
bogus: true
`
	_, err := Parse([]byte(yaml), "dir/imagebump.yaml")
	if err == nil {
		t.Fatal("Parse succeeded, want errors")
	}
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *Error
		if !errors.As(e, &ce) {
			t.Fatalf("error %v is not an *Error", e)
		}
		got = append(got, ce.File+":"+ce.Path)
	}
	want := []string{
		"dir/imagebump.yaml:images[0].name",
		"dir/imagebump.yaml:images[0].repository",
		"dir/imagebump.yaml:images[0].policy",
		"dir/imagebump.yaml:registries[0].concurrency",
		"dir/imagebump.yaml:",
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("errors (-got +want):\n%s\n%v", diff, err)
	}
}

// TestParseRuleErrorBesideOthers: an entry with a bad name (or a
// repository, or a duplicate name) had its rule's error held back for a
// second round; every error shows at once.
func TestParseRuleErrorBesideOthers(t *testing.T) {
	_, err := Parse([]byte(`images:
  - name: Apps:Web
    repository: x/y
    policy: {semver: "banana"}
  - name: ok
    repository: X
    policy: {alphabetical: sideways}
  - name: ok
    repository: x/z
    policy: {semver: "apple"}
`), "imagebump.yaml")
	if err == nil {
		t.Fatal("Parse succeeded, want errors")
	}
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *Error
		if errors.As(e, &ce) {
			got = append(got, ce.Path)
		}
	}
	want := []string{"images[0].name", "images[0].policy.semver", "images[1].repository", "images[1].policy.alphabetical", "images[2].name", "images[2].policy.semver"}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("errors (-got +want):\n%s\n%v", diff, err)
	}
}

// TestParseFilterErrorsBesideOthers: a bad filter is reported beside a
// bad rule, where only the rule's error showed until it was fixed.
func TestParseFilterErrorsBesideOthers(t *testing.T) {
	_, err := Parse([]byte(`
images:
  - name: apps:web
    repository: ghcr.io/acme/web
    policy: {numerical: up}
    filterTags: {pattern: '^v(?P<v>.*)$', extract: '$ver'}
`), "imagebump.yaml")
	var got []string
	if err != nil {
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			var ce *Error
			if errors.As(e, &ce) {
				got = append(got, ce.Path)
			}
		}
	}
	want := []string{"images[0].policy.numerical", "images[0].filterTags.extract"}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("errors (-got +want):\n%s\n%v", diff, err)
	}

	// A bad semver range (a value the policy package refuses, not the
	// config's shape), a bad pattern and two bad exclude patterns: the
	// range's error alone showed, then the pattern's, and so on.
	_, err = Parse([]byte(`
images:
  - name: apps:web
    repository: ghcr.io/acme/web
    policy: {semver: "not a range"}
    filterTags: {pattern: '^v(.*$'}
    exclude: ['ok', '(', '[']
`), "imagebump.yaml")
	got = nil
	if err != nil {
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			var ce *Error
			if errors.As(e, &ce) {
				got = append(got, ce.Path)
			}
		}
	}
	want = []string{"images[0].policy.semver", "images[0].filterTags.pattern", "images[0].exclude[1]", "images[0].exclude[2]"}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("errors (-got +want):\n%s\n%v", diff, err)
	}
}

func TestParseResolvesPaths(t *testing.T) {
	yaml := `
registries:
  - host: ghcr.io
    auth: {dockerConfig: docker/config.json}
    caFile: /etc/ssl/ca.pem
git:
  url: https://example.com/fleet.git
  auth: {tokenFile: ../secrets/token}
commit:
  signingKeyFile: key.asc
push:
  branch: bump
  pullRequest: {provider: github, tokenFile: pr-token}
`
	c, err := Parse([]byte(yaml), "/etc/imagebump/imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := []string{
		c.Registries[0].Auth.DockerConfig,
		c.Registries[0].CAFile,
		c.Git.Auth.TokenFile,
		c.Commit.SigningKeyFile,
		c.Push.PullRequest.TokenFile,
	}
	want := []string{
		"/etc/imagebump/docker/config.json",
		"/etc/ssl/ca.pem",
		"/etc/secrets/token",
		"/etc/imagebump/key.asc",
		"/etc/imagebump/pr-token",
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("paths (-got +want):\n%s", diff)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "imagebump.yaml")
	yaml := "git:\n  url: https://example.com/fleet.git\n  auth: {tokenFile: token}\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Git.Auth.TokenFile, filepath.Join(dir, "token"); got != want {
		t.Errorf("tokenFile = %q, want %q", got, want)
	}
	if got, want := c.File, file; got != want {
		t.Errorf("File = %q, want %q", got, want)
	}

	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want an error wrapping os.ErrNotExist", err)
	}
}

// TestLoadExample loads the documented full example.
func TestLoadExample(t *testing.T) {
	c, err := Load("../docs/examples/imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(c.Images), 3; got != want {
		t.Errorf("len(Images) = %d, want %d", got, want)
	}
	if got, want := len(c.Registries), 4; got != want {
		t.Errorf("len(Registries) = %d, want %d", got, want)
	}
	if c.Git == nil || c.Commit == nil || c.Push == nil || c.Push.PullRequest == nil || c.Schedule == "" {
		t.Errorf("the example should set git, commit, push with pullRequest and schedule: %+v", c)
	}
	for _, im := range c.Images {
		if im.Policy() == nil {
			t.Errorf("image %s has no policy", im.Name)
		}
	}
	if im, ok := c.Image("minio"); !ok || im.Name != "default:minio" {
		t.Errorf(`Image("minio") = %v, %v; want default:minio`, im, ok)
	}
}

func TestImage(t *testing.T) {
	yaml := `
images:
  - name: app
    repository: nginx
    policy: {semver: ">=1"}
  - name: apps:api
    repository: ghcr.io/acme/api
    policy: {semver: ">=1"}
`
	c, err := Parse([]byte(yaml), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		wantName string // "" means not found
		wantLine int
	}{
		{"app", "default:app", 3},
		{"default:app", "default:app", 3},
		{"apps:api", "apps:api", 6},
		{"api", "", 0},
		{"apps:app", "", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			im, ok := c.Image(tt.name)
			if tt.wantName == "" {
				if ok {
					t.Errorf("Image(%q) = %s, want not found", tt.name, im.Name)
				}
				return
			}
			if !ok {
				t.Fatalf("Image(%q) not found", tt.name)
			}
			if im.Name != tt.wantName || im.Line != tt.wantLine {
				t.Errorf("Image(%q) = %s at line %d, want %s at line %d", tt.name, im.Name, im.Line, tt.wantName, tt.wantLine)
			}
			if im.Policy() == nil {
				t.Errorf("Image(%q).Policy() = nil", tt.name)
			}
		})
	}
}

func TestTargets(t *testing.T) {
	for _, tt := range []struct {
		name string
		yaml string
		want []Target
	}{{
		name: "no git",
		yaml: "images: []\n",
		want: nil,
	}, {
		name: "top-level",
		yaml: `
images: []
git:
  url: https://example.com/fleet.git
schedule: "@hourly"
`,
		want: []Target{{
			Name:     DefaultTargetName,
			Git:      &Git{URL: "https://example.com/fleet.git"},
			Commit:   defaultCommit(),
			Schedule: "@hourly",
			Line:     3,
		}},
	}, {
		name: "list",
		yaml: `
targets:
  - name: a
    git: {url: "https://example.com/a.git"}
  - name: b
    git: {url: "https://example.com/b.git"}
    policies: ["x:*"]
`,
		want: []Target{
			{Name: "a", Git: &Git{URL: "https://example.com/a.git"}, Commit: defaultCommit(), Line: 3},
			{Name: "b", Git: &Git{URL: "https://example.com/b.git"}, Commit: defaultCommit(), Policies: []string{"x:*"}, Line: 5},
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "imagebump.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.Targets(), tt.want); diff != "" {
				t.Errorf("Targets (-got +want):\n%s", diff)
			}
		})
	}
}

func TestTargetSelects(t *testing.T) {
	for _, tt := range []struct {
		policies []string
		image    string
		want     bool
	}{
		{nil, "apps:app", true},
		{[]string{"apps:*"}, "apps:app", true},
		{[]string{"apps:*"}, "app", false},
		{[]string{"app"}, "default:app", true},
		{[]string{"app"}, "app", true},
		{[]string{"*"}, "app", true},
		{[]string{"*"}, "apps:app", false},
		{[]string{"*:*"}, "apps:app", true},
		{[]string{"web", "apps:a?i"}, "apps:api", true},
	} {
		t.Run(strings.Join(tt.policies, ",")+"/"+tt.image, func(t *testing.T) {
			if got := (Target{Policies: tt.policies}).Selects(tt.image); got != tt.want {
				t.Errorf("Selects(%q) = %v, want %v", tt.image, got, tt.want)
			}
		})
	}
}

func TestSpec(t *testing.T) {
	yaml := `
images:
  - name: app
    repository: nginx
    policy: {numerical: asc}
    filterTags: {pattern: '^b-(?P<n>\d+)$', extract: '$n'}
    exclude: ['^b-0$']
    digest: ifNotPresent
`
	c, err := Parse([]byte(yaml), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	im, _ := c.Image("app")
	want := policy.Spec{
		Numerical:     "asc",
		FilterPattern: `^b-(?P<n>\d+)$`,
		FilterExtract: "$n",
		Exclude:       []string{"^b-0$"},
		Digest:        policy.DigestIfNotPresent,
	}
	if diff := cmp.Diff(im.Spec(), want); diff != "" {
		t.Errorf("Spec (-got +want):\n%s", diff)
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  *Error
		want string
	}{
		{"full", &Error{File: "f.yaml", Line: 3, Column: 7, Path: "git.url", Msg: "bad"}, "f.yaml:3:7: git.url: bad"},
		{"no column", &Error{File: "f.yaml", Line: 3, Msg: "invalid YAML: x"}, "f.yaml:3: invalid YAML: x"},
		{"wrapped, one line", &Error{File: "f.yaml", Line: 1, Column: 1, Msg: "m", Err: errors.New("a\nb")}, `f.yaml:1:1: m: a\nb`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseManyErrors(t *testing.T) {
	yaml := "registries:\n" + strings.Repeat("  - host: ghcr.io/x\n", 60)
	_, err := Parse([]byte(yaml), "imagebump.yaml")
	if err == nil {
		t.Fatal("Parse succeeded, want errors")
	}
	lines := strings.Split(err.Error(), "\n")
	if got, want := len(lines), maxErrors+1; got != want {
		t.Fatalf("got %d error lines, want %d", got, want)
	}
	if got, want := lines[maxErrors], "imagebump.yaml:52: and 10 more problems"; got != want {
		t.Errorf("last line = %q, want %q", got, want)
	}
}

func TestParseTooManyAliases(t *testing.T) {
	// Each target repeats a list of 3,000 paths by alias: 2,000 targets
	// would decode six million values.
	yaml := "x: &p [" + strings.Repeat("a, ", 3000) + "a]\ntargets:\n" +
		strings.Repeat("  - {name: t, git: {url: 'https://example.com/x.git', paths: *p}}\n", 2000)
	_, err := Parse([]byte(yaml), "imagebump.yaml")
	if err == nil || !strings.Contains(err.Error(), "document too large") {
		t.Errorf("Parse = %v, want a document too large error", err)
	}
}

// TestEnvSecretReferences checks that env:NAME secret references are kept
// as they are, while file paths are resolved against the config's folder.
func TestEnvSecretReferences(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "imagebump.yaml")
	if err := os.WriteFile(p, []byte(`registries:
  - host: ghcr.io
    auth: {usernameFile: user, passwordFile: env:GHCR_PASSWORD}
git:
  url: https://git.example/fleet.git
  auth: {tokenFile: env:GIT_TOKEN}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Registries[0].Auth
	if a.UsernameFile != filepath.Join(dir, "user") || a.PasswordFile != "env:GHCR_PASSWORD" {
		t.Errorf("registry auth = %+v", a)
	}
	if got := cfg.Git.Auth.TokenFile; got != "env:GIT_TOKEN" {
		t.Errorf("git token = %q, want env:GIT_TOKEN", got)
	}
}

func TestGitURLWithTokenRefused(t *testing.T) {
	for _, u := range []string{"https://ghp_secrettoken@github.com/acme/fleet.git", "http://user@git.example/fleet.git"} {
		_, err := Parse([]byte("git:\n  url: "+u+"\n"), "imagebump.yaml")
		if err == nil || !strings.Contains(err.Error(), "takes no credentials from URLs") {
			t.Errorf("url %s: Parse = %v, want a refusal that explains", u, err)
		}
		if err != nil && strings.Contains(err.Error(), "ghp_secrettoken") {
			t.Errorf("the refusal repeats the token: %v", err)
		}
	}
	if _, err := Parse([]byte("git:\n  url: ssh://git@github.com/acme/fleet.git\n  auth: {sshKeyFile: k, knownHostsFile: h}\n"), "imagebump.yaml"); err != nil {
		t.Errorf("ssh://git@ URL refused: %v", err)
	}
}

func TestUnquotedCronAndGlobGetAHint(t *testing.T) {
	for _, tt := range []struct{ name, yaml, want string }{
		{"cron", "schedule: */5 * * * *\n", `write "*/5 * * * *"`},
		{"descriptor", "schedule: @every 5m\n", `write "@every 5m"`},
		{"glob in a flow list", "targets:\n  - name: a\n    git: {url: https://x.example/a.git}\n    policies: [*]\n", `write "*"`},
		{"glob in a block list", "targets:\n  - name: a\n    git: {url: https://x.example/a.git}\n    policies:\n      - *\n", `write "*"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "imagebump.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "must be quoted") {
				t.Errorf("Parse = %v, want a hint containing %q", err, tt.want)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	parse := func(name, text string) *Config {
		t.Helper()
		c, err := Parse([]byte(text), name)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	native := parse("imagebump.yaml", `
registries: [{host: ghcr.io, insecure: false}]
images: [{name: apps:web, repository: ghcr.io/acme/web, policy: {semver: ">=1.0.0"}}]
git: {url: "https://git.example/fleet.git"}
`)
	fromFlux := parse("flux", `
registries: [{host: ghcr.io, insecure: false}]
images: [{name: flux-system:podinfo, repository: ghcr.io/acme/podinfo, policy: {semver: ">=1.0.0"}}]
targets: [{name: flux-system-auto, git: {url: "https://git.example/fleet.git"}, policies: ["flux-system:*"]}]
`)
	c, err := Merge(native, fromFlux)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Has("apps:web") || !c.Has("flux-system:podinfo") || len(c.Registries) != 1 {
		t.Errorf("merged: images %v, registries %d", c.Images, len(c.Registries))
	}
	var names []string
	for _, tg := range c.Targets() {
		names = append(names, tg.Name)
	}
	if diff := cmp.Diff(names, []string{"default", "flux-system-auto"}); diff != "" {
		t.Errorf("targets (-got +want):\n%s", diff)
	}
	if _, err := Merge(native, native); err == nil || !strings.Contains(err.Error(), "image policy apps:web is in both imagebump.yaml:3 and imagebump.yaml") {
		t.Errorf("Merge of a config with itself = %v, want duplicate errors naming the first's line", err)
	}
	conflict := parse("flux", "registries: [{host: ghcr.io, insecure: true, concurrency: 2}]\n")
	if _, err := Merge(native, conflict); err == nil || !strings.Contains(err.Error(), "registry ghcr.io is set in imagebump.yaml:2 and, differently (insecure, concurrency), in flux") {
		t.Errorf("Merge of conflicting registries = %v, want the native line and the keys that differ", err)
	}
}

func TestMaxFileSize(t *testing.T) {
	for _, tt := range []struct {
		value   string
		want    int64
		wantErr string
	}{
		{"", 0, ""},
		{"4MiB", 4 << 20, ""},
		{`"512 KiB"`, 512 << 10, ""},
		{`"1048576"`, 1 << 20, ""},
		{"1GiB", 1 << 30, ""},
		{"4MB", 0, `imagebump.yaml:1:14: maxFileSize: "4MB" is not a size`},
		{`"0"`, 0, `maxFileSize: "0" is not a size a file can be read within: give a positive one`},
		{"0MiB", 0, `maxFileSize: "0MiB" is not a size a file can be read within`},
		{`"-4MiB"`, 0, `maxFileSize: "-4MiB" is not a size a file can be read within`},
		{"1024GiB", 1 << 40, ""},
		{"2048GiB", 0, `maxFileSize: "2048GiB" is more than the largest size taken, 1024GiB`},
		{`"99999999999999999999"`, 0, `maxFileSize: "99999999999999999999" is more than the largest size taken, 1024GiB`},
		{"4194304", 0, "maxFileSize: expected a string, got an integer (quote it)"},
	} {
		t.Run(tt.value, func(t *testing.T) {
			src := "images: []\n"
			if tt.value != "" {
				src = "maxFileSize: " + tt.value + "\n" + src
			}
			c, err := Parse([]byte(src), "imagebump.yaml")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.FileSizeLimit(); got != tt.want {
				t.Errorf("FileSizeLimit() = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestRepositoryKey: the URLs of one repository share a key; those of
// others do not.
func TestRepositoryKey(t *testing.T) {
	same := []string{
		"https://example.com/acme/fleet.git",
		"https://token@Example.com/acme/fleet/",
		"ssh://git@example.com:2222/acme/fleet.git",
		"git@example.com:acme/fleet.git",
		"example.com:/acme/fleet",
	}
	for _, u := range same {
		if got, want := repositoryKey(u), "example.com/acme/fleet"; got != want {
			t.Errorf("repositoryKey(%q) = %q, want %q", u, got, want)
		}
	}
	for _, u := range []string{"https://example.com/acme/other.git", "https://example.org/acme/fleet.git", "file:///srv/acme/fleet.git", "/srv/acme/fleet"} {
		if repositoryKey(u) == "example.com/acme/fleet" {
			t.Errorf("repositoryKey(%q) is the fleet's", u)
		}
	}
}

// TestParseTrailingEmptyDocument: empty documents after the config, as a
// trailing "---" opens (editors and kustomize write one), are no config
// of their own.
func TestParseTrailingEmptyDocument(t *testing.T) {
	const cfg = "images:\n  - {name: app, repository: nginx, policy: {semver: \">=1\"}}\n"
	for name, tail := range map[string]string{
		"separator":              "---\n",
		"separator, no newline":  "---",
		"separator and comment":  "--- # end\n# more\n",
		"two separators":         "---\n---\n",
		"document end":           "...\n",
		"separator and null":     "--- null\n",
		"separator, blank lines": "---\n\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := Parse([]byte(cfg+tail), "imagebump.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Images) != 1 {
				t.Errorf("images = %d, want 1", len(c.Images))
			}
		})
	}
}

// TestInlineSecretRefused: a secret pasted where its file's path goes is
// refused without being shown.
func TestInlineSecretRefused(t *testing.T) {
	_, err := Parse([]byte("git:\n  url: https://example.com/fleet.git\n  auth: {tokenFile: ghp_Sup3rS3cretValue123456}\n"), "imagebump.yaml")
	if err == nil || strings.Contains(err.Error(), "Sup3rS3cret") {
		t.Errorf("Parse: %v; want an error that does not show the token", err)
	}
}
