package discover

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/policy"
)

var testProposals = []Proposal{
	{Policy: "apps:web", Repository: "ghcr.io/acme/web", Kind: KindSemVer, Spec: policy.Spec{SemVer: ">=1.2.0 <2.0.0"}, Reason: "versions", TagsInUse: []string{"1.2.0"}},
	{Policy: "default:db", Repository: "ghcr.io/acme/db", Kind: KindMoving, Choice: true, Spec: policy.Spec{Alphabetical: "asc", FilterPattern: "^latest$", Digest: policy.DigestAlways}},
	{Policy: "ops:backup", Repository: "ghcr.io/acme/backup", Kind: KindTimestamp, Spec: policy.Spec{Alphabetical: "asc", FilterPattern: "^(?P<ts>[0-9]{8})$", FilterExtract: "$ts", Digest: policy.DigestAlways}, Reason: "timestamps"},
	{Policy: "apps:old", Repository: "ghcr.io/acme/old", Existing: true},
}

const testEntries = `  # in use: 1.2.0. Versions.
  - name: apps:web
    repository: ghcr.io/acme/web
    policy:
      semver: '>=1.2.0 <2.0.0'
  # Timestamps.
  - name: ops:backup
    repository: ghcr.io/acme/backup
    policy:
      alphabetical: asc
    filterTags:
      pattern: ^(?P<ts>[0-9]{8})$
      extract: $ts
    digest: always
`

func TestAppendImages(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // "" means ErrNotAppendable
	}{
		{
			name: "after the last item, before the next key and its comment",
			src:  "images:\n  - name: apps:old\n    repository: ghcr.io/acme/old\n    policy: {semver: \">=1\"}\n\n# the target\ngit:\n  url: https://git.example/a.git\n",
			want: "images:\n  - name: apps:old\n    repository: ghcr.io/acme/old\n    policy: {semver: \">=1\"}\n" + testEntries + "\n# the target\ngit:\n  url: https://git.example/a.git\n",
		},
		{
			name: "no images key, no final newline",
			src:  "registries:\n  - host: ghcr.io",
			want: "registries:\n  - host: ghcr.io\nimages:\n" + testEntries,
		},
		{
			name: "unindented items, four-space keys",
			src:  "images:\n-   name: old\n    repository: ghcr.io/acme/old\n    policy:\n        semver: '>=1'\n",
			want: "images:\n-   name: old\n    repository: ghcr.io/acme/old\n    policy:\n        semver: '>=1'\n" +
				strings.NewReplacer("\n  - ", "\n-   ", "  # ", "# ").Replace("\n" + testEntries)[1:],
		},
		{
			name: "CRLF",
			src:  "images:\r\n  - name: apps:old\r\n    repository: ghcr.io/acme/old\r\n    policy: {semver: \">=1\"}\r\n",
			want: "images:\r\n  - name: apps:old\r\n    repository: ghcr.io/acme/old\r\n    policy: {semver: \">=1\"}\r\n" + strings.ReplaceAll(testEntries, "\n", "\r\n"),
		},
		{
			name: "no images key, a document end at the end",
			src:  "registries:\n  - host: ghcr.io\n---\n",
			want: "registries:\n  - host: ghcr.io\nimages:\n" + testEntries + "---\n",
		},
		{
			name: "images last, an end marker and a comment after it",
			src:  "---\nimages:\n  - name: apps:old\n    repository: ghcr.io/acme/old\n    policy: {semver: \">=1\"}\n\n...\n# the end\n",
			want: "---\nimages:\n  - name: apps:old\n    repository: ghcr.io/acme/old\n    policy: {semver: \">=1\"}\n" + testEntries + "\n...\n# the end\n",
		},
		{
			name: "no images key, no final newline before the marker",
			src:  "registries:\n  - host: ghcr.io\n--- # end",
			want: "registries:\n  - host: ghcr.io\nimages:\n" + testEntries + "--- # end",
		},
		{
			name: "a block scalar whose last line reads as a marker",
			src:  "git: {url: https://git.example/a.git}\ncommit:\n  messageTemplate: |\n    bump\n    ---\n",
			want: "git: {url: https://git.example/a.git}\ncommit:\n  messageTemplate: |\n    bump\n    ---\nimages:\n" + testEntries,
		},
		{
			name: "empty file",
			src:  "",
			want: header + "images:\n" + testEntries,
		},
		{
			name: "flow sequence",
			src:  "images: []\n",
		},
		{
			name: "flow root",
			src:  "{images: [{name: a, repository: b, policy: {semver: '>=1'}}]}\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AppendImages([]byte(tt.src), "imagebump.yaml", testProposals)
			if tt.want == "" {
				if !errors.Is(err, ErrNotAppendable) {
					t.Fatalf("err = %v, want ErrNotAppendable", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(got), tt.want); diff != "" {
				t.Errorf("(-got +want):\n%s", diff)
			}
			// Only added to: src is got with one block cut out.
			if !isInsertion(tt.src, string(got)) {
				t.Errorf("the config was changed, not only added to")
			}
			cfg, err := config.Parse(got, "imagebump.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := cfg.Image("ops:backup"); !ok {
				t.Errorf("ops:backup not in the config")
			}
			if _, ok := cfg.Image("default:db"); ok {
				t.Errorf("a choice was written")
			}
		})
	}
}

// isInsertion reports whether b is a with one run of bytes inserted.
func isInsertion(a, b string) bool {
	pre := 0
	for pre < len(a) && a[pre] == b[pre] {
		pre++
	}
	return strings.HasSuffix(b, a[pre:]) && len(b) >= len(a)
}

func TestAppendImagesNothingToAdd(t *testing.T) {
	src := []byte("images: []\n")
	got, err := AppendImages(src, "imagebump.yaml", testProposals[1:2])
	if err != nil || string(got) != string(src) {
		t.Errorf("got %q, %v; want the config as it is", got, err)
	}
}

func TestNewConfig(t *testing.T) {
	got := NewConfig(testProposals, []string{"localhost:5000"})
	cfg, err := config.Parse(got, "imagebump.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	if len(cfg.Images) != 2 || len(cfg.Registries) != 1 || !cfg.Registries[0].Insecure {
		t.Errorf("%d images, registries %+v:\n%s", len(cfg.Images), cfg.Registries, got)
	}
	im, _ := cfg.Image("ops:backup")
	if diff := cmp.Diff(im.Spec(), policy.Spec{Alphabetical: "asc", FilterPattern: "^(?P<ts>[0-9]{8})$", FilterExtract: "$ts", Digest: policy.DigestAlways}); diff != "" {
		t.Errorf("ops:backup's rule (-got +want):\n%s", diff)
	}
}
