package serve

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagebump/imagebump/policy"
)

// TestParsePayload reads one payload of each sender (testdata/payloads,
// written after each sender's documented format) and says which images
// it names.
func TestParsePayload(t *testing.T) {
	for _, tt := range []struct {
		file   string
		header http.Header
		want   payload
	}{
		{"dockerhub.json", nil, payload{Kind: PayloadDockerHub, Pushes: []push{{"docker.io/acme/web", "1.4.2"}}}},
		{"harbor.json", nil, payload{Kind: PayloadHarbor, Pushes: []push{{"harbor.example.com/library/api", "2.0.1"}}}},
		// A digest in the tag field is no tag: the repository stays.
		{"harbor-cloudevents.json", nil, payload{Kind: PayloadHarbor, Pushes: []push{{"harbor.example.com/team/worker", ""}, {"harbor.example.com/team/worker", "3.1.0"}}}},
		{"harbor-pull.json", nil, payload{Kind: PayloadHarbor, Skipped: 1}},
		{"quay.json", nil, payload{Kind: PayloadQuay, Pushes: []push{{"quay.io/acme/worker", "1.7.0"}, {"quay.io/acme/worker", "latest"}}}},
		{"github-package.json", http.Header{"X-Github-Event": {"package"}}, payload{Kind: PayloadGitHub, Pushes: []push{{"ghcr.io/acme/app", "1.2.3"}}}},
		{"github-registry-package.json", http.Header{"X-Github-Event": {"registry_package"}}, payload{Kind: PayloadGitHub, Pushes: []push{{"ghcr.io/acme/cli", "0.9.0"}}}},
		{"github-untagged.json", nil, payload{Kind: PayloadGitHub, Pushes: []push{{"ghcr.io/acme/tools/lint", ""}}}},
		{"github-npm.json", nil, payload{Kind: PayloadGitHub, Skipped: 1}},
		{"github-package.json", http.Header{"X-Github-Event": {"ping"}}, payload{Kind: PayloadGitHub, Ping: true}},
		// A blob push and a pull are skipped; the manifest's push counts.
		{"distribution.json", nil, payload{Kind: PayloadDistribution, Pushes: []push{{"registry.example.com:5000/acme/web", "1.5.0"}}, Skipped: 2}},
		{"generic.json", nil, payload{Kind: PayloadGeneric, Pushes: []push{{"registry.example.com/acme/gen", "4.0.0"}}}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "payloads", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			h := tt.header
			if h == nil {
				h = http.Header{}
			}
			got, err := parsePayload(body, h)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("payload (-got +want):\n%s", diff)
			}
		})
	}
}

// TestParsePayloadInline covers the edges of each format with small
// bodies.
func TestParsePayloadInline(t *testing.T) {
	for _, tt := range []struct {
		name string
		body string
		want payload
	}{
		{"generic without a tag", `{"repository": "ghcr.io/acme/app"}`, payload{Kind: PayloadGeneric, Pushes: []push{{"ghcr.io/acme/app", ""}}}},
		{"generic with the tag in the repository", `{"repository": "localhost:5000/acme/app:1.0.0"}`, payload{Kind: PayloadGeneric, Pushes: []push{{"localhost:5000/acme/app", "1.0.0"}}}},
		{"generic Docker Hub short name", `{"repository": "nginx", "tag": "1.27"}`, payload{Kind: PayloadGeneric, Pushes: []push{{"nginx", "1.27"}}}},
		{"generic upper case", `{"repository": "GHCR.io/Acme/App", "tag": "V1"}`, payload{Kind: PayloadGeneric, Pushes: []push{{"ghcr.io/acme/app", "V1"}}}},
		{"generic invalid tag dropped", `{"repository": "ghcr.io/acme/app", "tag": "a b"}`, payload{Kind: PayloadGeneric, Pushes: []push{{"ghcr.io/acme/app", ""}}}},
		{"duplicates once", `{"events": [
			{"action": "push", "target": {"repository": "a/b", "tag": "1"}, "request": {"host": "r.example"}},
			{"action": "push", "target": {"repository": "a/b", "tag": "1"}, "request": {"host": "r.example"}}]}`,
			payload{Kind: PayloadDistribution, Pushes: []push{{"r.example/a/b", "1"}}}},
		{"distribution manifest by digest", `{"events": [{"action": "push", "target": {"mediaType": "application/vnd.oci.image.index.v1+json", "repository": "a/b"}, "request": {"host": "r.example"}}]}`,
			payload{Kind: PayloadDistribution, Pushes: []push{{"r.example/a/b", ""}}}},
		{"distribution deletion", `{"events": [{"action": "delete", "target": {"repository": "a/b", "tag": "1"}, "request": {"host": "r.example"}}]}`,
			payload{Kind: PayloadDistribution, Skipped: 1}},
		{"empty envelope", `{"events": []}`, payload{Kind: PayloadDistribution}},
		{"GitHub without package_url", `{"action": "published", "package": {"name": "app", "namespace": "acme", "package_type": "container", "package_version": {"container_metadata": {"tag": {"name": "2.0.0"}}}}}`,
			payload{Kind: PayloadGitHub, Pushes: []push{{"ghcr.io/acme/app", "2.0.0"}}}},
		{"GitHub deletion", `{"action": "deleted", "package": {"name": "app", "package_type": "CONTAINER"}}`, payload{Kind: PayloadGitHub, Skipped: 1}},
		{"Harbor deletion", `{"specversion": "1.0", "type": "harbor.artifact.deleted", "data": {"resources": [{"resource_url": "h.example/p/a:1"}]}}`, payload{Kind: PayloadHarbor, Skipped: 1}},
		{"Quay without tags", `{"docker_url": "quay.io/acme/app", "updated_tags": []}`, payload{Kind: PayloadQuay, Pushes: []push{{"quay.io/acme/app", ""}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePayload([]byte(tt.body), http.Header{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("payload (-got +want):\n%s", diff)
			}
		})
	}
}

// TestParsePayloadGitHubOtherEvents: a GitHub webhook that sends every
// event is answered for each, the events other than packages skipped,
// whatever their body.
func TestParsePayloadGitHubOtherEvents(t *testing.T) {
	for _, ev := range []string{"push", "workflow_run", "star"} {
		got, err := parsePayload([]byte(`{"ref": "refs/heads/main", "repository": {"full_name": "acme/fleet"}}`), http.Header{"X-Github-Event": {ev}})
		if err != nil || got.Kind != PayloadGitHub || got.Skipped != 1 || len(got.Pushes) != 0 {
			t.Errorf("X-GitHub-Event %s: %+v, %v; want a skipped GitHub event", ev, got, err)
		}
	}
	got, err := parsePayload([]byte(`{"action": "published", "package": {"name": "app", "namespace": "acme", "package_type": "container", "package_version": {"container_metadata": {"tag": {"name": "2.0.0"}}}}}`), http.Header{"X-Github-Event": {"package"}})
	if err != nil || len(got.Pushes) != 1 {
		t.Errorf("X-GitHub-Event package: %+v, %v; want its push", got, err)
	}
}

// TestParsePayloadRefused lists bodies that are no payload serve reads:
// each is an errPayload error that says why.
func TestParsePayloadRefused(t *testing.T) {
	for _, tt := range []struct {
		name, body, phrase string
	}{
		{"not JSON", `repository=ghcr.io/acme/app`, "not a JSON object"},
		{"an array", `[{"repository": "ghcr.io/acme/app"}]`, "not a JSON object"},
		{"null", `null`, "null"},
		{"empty object", `{}`, "no key of a known format"},
		{"unknown format", `{"image": "ghcr.io/acme/app"}`, "no key of a known format"},
		{"generic with an unknown key", `{"repository": "ghcr.io/acme/app", "tags": ["1"]}`, `unknown field "tags"`},
		{"generic repository not a string", `{"repository": {"name": "app"}}`, "want {\"repository\""},
		{"bad repository", `{"repository": "ghcr.io/acme//app"}`, "repository \"ghcr.io/acme//app\""},
		{"empty repository", `{"repository": ""}`, "names no repository"},
		{"Docker Hub without repo_name", `{"push_data": {"tag": "1"}, "repository": {}}`, "repo_name"},
		{"distribution without host", `{"events": [{"action": "push", "target": {"repository": "a/b", "tag": "1"}}]}`, "request.host"},
		{"distribution events not a list", `{"events": {"action": "push"}}`, "not a distribution notification payload"},
		{"Harbor without resource_url", `{"type": "PUSH_ARTIFACT", "event_data": {"resources": [{"tag": "1"}]}}`, "resource_url"},
		{"a CloudEvent not of Harbor", `{"specversion": "1.0", "type": "com.example.thing", "data": {}}`, "only Harbor's"},
		{"GitHub null package", `{"action": "published", "package": null}`, "null package"},
		{"Quay without docker_url", `{"updated_tags": ["1"]}`, "docker_url"},
		{"too many images", `{"docker_url": "quay.io/a/b", "updated_tags": [` + strings.Repeat(`"t",`, maxPushes) + `"t"]}`, "more than"},
		// GitHub's default content type for a new webhook.
		{"form-encoded", `payload=%7B%22action%22%3A%22published%22%7D`, "set the webhook's content type to application/json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.name == "form-encoded" {
				h.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			got, err := parsePayload([]byte(tt.body), h)
			if err == nil {
				t.Fatalf("parsePayload = %+v, want an error", got)
			}
			if !errors.Is(err, errPayload) || !strings.Contains(err.Error(), tt.phrase) {
				t.Errorf("error %q: want errPayload saying %q", err, tt.phrase)
			}
		})
	}
}

// FuzzParsePayload checks that parsePayload never panics, and that what it
// accepts is usable as is: each repository parses, is lower case and
// appears once with its tag; each tag is a valid tag or empty.
func FuzzParsePayload(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "payloads"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("testdata", "payloads", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"repository": "Nginx:1.27"}`))
	f.Add([]byte(`{"events": [{"action": "push", "target": {"repository": "a/b", "tag": "1"}, "request": {"host": "h:1"}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := parsePayload(body, http.Header{})
		if err != nil {
			if !errors.Is(err, errPayload) {
				t.Errorf("error %v is not errPayload", err)
			}
			return
		}
		seen := map[push]bool{}
		for _, ps := range p.Pushes {
			if _, err := name.NewRepository(ps.Repository); err != nil {
				t.Errorf("repository %q does not parse: %v", ps.Repository, err)
			}
			if ps.Repository != strings.ToLower(ps.Repository) {
				t.Errorf("repository %q is not lower case", ps.Repository)
			}
			if ps.Tag != "" && !policy.ValidTag(ps.Tag) {
				t.Errorf("tag %q is not valid", ps.Tag)
			}
			if seen[ps] {
				t.Errorf("%s twice", ps)
			}
			seen[ps] = true
		}
		if len(p.Pushes) > maxPushes {
			t.Errorf("%d pushes, over the cap", len(p.Pushes))
		}
	})
}
