package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/policy"
)

// Kinds of webhook payload, as the logs, the status and the response name
// them.
const (
	PayloadDockerHub    = "dockerhub"
	PayloadHarbor       = "harbor"
	PayloadQuay         = "quay"
	PayloadGitHub       = "github"
	PayloadDistribution = "distribution"
	PayloadGeneric      = "generic"
)

// maxPushes caps the images one payload may name (a distribution envelope
// holds many events); more is refused as unparseable.
const maxPushes = 1000

// errPayload is the error of a payload that is not one of the formats
// serve reads, or that names no image it can read.
var errPayload = errors.New("unrecognised webhook payload")

// push is one image a registry event names: a repository (HOST/PATH, as
// the sender spells it) and, when the event names one, the tag.
type push struct {
	Repository string `json:"repository"`
	Tag        string `json:"tag,omitempty"`
}

func (p push) String() string {
	if p.Tag == "" {
		return p.Repository
	}
	return p.Repository + ":" + p.Tag
}

// payload is what a webhook request says: its format, the images pushed,
// and how many of its events are not pushes (pulls, deletions, scans),
// which are skipped.
type payload struct {
	Kind    string
	Pushes  []push
	Skipped int
	// Ping is GitHub's test delivery (X-GitHub-Event: ping).
	Ping bool
}

// parsePayload reads the body of a webhook request. The format is told by
// the keys of the JSON object (and GitHub's X-GitHub-Event header for its
// ping): distribution's events, Docker Hub's push_data, Harbor's
// event_data (or a CloudEvents data of Harbor's), GitHub's package or
// registry_package, Quay's docker_url, and the generic repository string.
// Events that are not pushes are counted in Skipped; an image whose
// repository does not parse makes the whole payload an error. Tags that
// are not valid tags (a digest in Harbor's tag field, say) are dropped,
// keeping the repository.
func parsePayload(body []byte, h http.Header) (payload, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		if ct, _, _ := strings.Cut(h.Get("Content-Type"), ";"); strings.EqualFold(strings.TrimSpace(ct), "application/x-www-form-urlencoded") {
			// GitHub's default for a new webhook.
			return payload{}, fmt.Errorf("%w: the body is form-encoded (Content-Type: application/x-www-form-urlencoded), not JSON: set the webhook's content type to application/json where it is made (on GitHub: Content type, in the webhook's settings)", errPayload)
		}
		return payload{}, fmt.Errorf("%w: the body is not a JSON object: %v", errPayload, err)
	}
	if top == nil {
		return payload{}, fmt.Errorf("%w: the body is null, not a JSON object", errPayload)
	}
	has := func(k string) bool { _, ok := top[k]; return ok }
	var (
		p   payload
		err error
	)
	switch ev := h.Get("X-GitHub-Event"); {
	case ev == "ping":
		return payload{Kind: PayloadGitHub, Ping: true}, nil
	case ev != "" && ev != "package" && ev != "registry_package":
		// A GitHub webhook sending every event (push, workflow_run...):
		// accepted and skipped, so GitHub's delivery log does not show
		// them all as failures.
		return payload{Kind: PayloadGitHub, Skipped: 1}, nil
	case has("events"):
		p, err = parseDistribution(body)
	case has("push_data"):
		p, err = parseDockerHub(body)
	case has("event_data"):
		p, err = parseHarbor(body)
	case has("specversion") && has("data"):
		p, err = parseHarborCloudEvent(body)
	case has("package") || has("registry_package"):
		p, err = parseGitHub(body)
	case has("docker_url") || has("updated_tags"):
		p, err = parseQuay(body)
	case has("repository"):
		p, err = parseGeneric(body)
	default:
		return payload{}, fmt.Errorf("%w: no key of a known format (events, push_data, event_data, package, registry_package, docker_url, repository)", errPayload)
	}
	if err != nil {
		return payload{}, err
	}
	if len(p.Pushes) > maxPushes {
		return payload{}, fmt.Errorf("%w: %d images in one payload, more than %d", errPayload, len(p.Pushes), maxPushes)
	}
	for i, ps := range p.Pushes {
		repo, err := checkRepository(ps.Repository)
		if err != nil {
			return payload{}, fmt.Errorf("%w: %s: %w", errPayload, p.Kind, err)
		}
		p.Pushes[i].Repository = repo
		if !policy.ValidTag(ps.Tag) {
			p.Pushes[i].Tag = ""
		}
	}
	seen := map[push]bool{}
	p.Pushes = slices.DeleteFunc(p.Pushes, func(ps push) bool {
		dup := seen[ps]
		seen[ps] = true
		return dup
	})
	return p, nil
}

// decodeAs decodes body into v, naming the format in the error.
func decodeAs(kind string, body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: not a %s payload: %v", errPayload, kind, err)
	}
	return nil
}

// checkRepository checks a repository a payload names (HOST/PATH, or a
// Docker Hub name) and returns it lowercased: registries compare
// repository names in lower case, and GitHub spells owners as they are
// written.
func checkRepository(repo string) (string, error) {
	repo = strings.ToLower(strings.TrimSpace(repo))
	if repo == "" {
		return "", errors.New("an event names no repository")
	}
	r, err := name.NewRepository(repo)
	if err != nil {
		return "", fmt.Errorf("repository %q: %w", printable.Cut(repo, 200), err)
	}
	// go-containerregistry admits paths the OCI distribution grammar
	// does not (a//b, a..b); no registry sends those.
	for c := range strings.SplitSeq(r.RepositoryStr(), "/") {
		if !pathComponentRE.MatchString(c) {
			return "", fmt.Errorf("repository %q: path component %q is not [a-z0-9]+ joined by '.', '_', '__' or dashes", printable.Cut(repo, 200), printable.Cut(c, 100))
		}
	}
	return repo, nil
}

// pathComponentRE is a path component of a repository name in the OCI
// distribution grammar.
var pathComponentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)

// splitReference splits HOST/PATH[:TAG][@DIGEST] into the repository and
// the tag.
func splitReference(ref string) (repo, tag string) {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		return ref[:i], ref[i+1:]
	}
	return ref, ""
}

// parseDistribution reads a CNCF distribution notification envelope:
// events[] with action, target.repository, target.tag and request.host.
// Pushes of blobs (no tag and a media type that is not a manifest) are
// skipped: the manifest's event follows them.
func parseDistribution(body []byte) (payload, error) {
	var env struct {
		Events []struct {
			Action string `json:"action"`
			Target struct {
				MediaType  string `json:"mediaType"`
				Repository string `json:"repository"`
				Tag        string `json:"tag"`
				URL        string `json:"url"`
			} `json:"target"`
			Request struct {
				Host string `json:"host"`
			} `json:"request"`
		} `json:"events"`
	}
	if err := decodeAs("distribution notification", body, &env); err != nil {
		return payload{}, err
	}
	p := payload{Kind: PayloadDistribution}
	for _, ev := range env.Events {
		if ev.Action != "push" || (ev.Target.Tag == "" && !isManifest(ev.Target.MediaType)) {
			p.Skipped++
			continue
		}
		host := ev.Request.Host
		if host == "" {
			return payload{}, fmt.Errorf("%w: distribution event for %q has no request.host", errPayload, printable.Cut(ev.Target.Repository, 200))
		}
		p.Pushes = append(p.Pushes, push{Repository: host + "/" + ev.Target.Repository, Tag: ev.Target.Tag})
	}
	return p, nil
}

// isManifest reports whether a media type is an image manifest or index.
func isManifest(mediaType string) bool {
	return strings.Contains(mediaType, "manifest") || strings.HasSuffix(mediaType, ".index.v1+json")
}

// parseDockerHub reads Docker Hub's push payload: repository.repo_name
// (NAMESPACE/NAME) and push_data.tag.
func parseDockerHub(body []byte) (payload, error) {
	var hub struct {
		PushData struct {
			Tag string `json:"tag"`
		} `json:"push_data"`
		Repository struct {
			RepoName string `json:"repo_name"`
		} `json:"repository"`
	}
	if err := decodeAs("Docker Hub", body, &hub); err != nil {
		return payload{}, err
	}
	if hub.Repository.RepoName == "" {
		return payload{}, fmt.Errorf("%w: Docker Hub payload without repository.repo_name", errPayload)
	}
	return payload{Kind: PayloadDockerHub, Pushes: []push{{Repository: "docker.io/" + hub.Repository.RepoName, Tag: hub.PushData.Tag}}}, nil
}

// harborData is the event data of Harbor's payloads, in both formats.
type harborData struct {
	Resources []struct {
		Tag         string `json:"tag"`
		ResourceURL string `json:"resource_url"`
	} `json:"resources"`
}

func (d harborData) pushes() ([]push, error) {
	var out []push
	for _, r := range d.Resources {
		if r.ResourceURL == "" {
			return nil, fmt.Errorf("%w: Harbor resource without resource_url", errPayload)
		}
		repo, tag := splitReference(r.ResourceURL)
		if r.Tag != "" {
			tag = r.Tag
		}
		out = append(out, push{Repository: repo, Tag: tag})
	}
	return out, nil
}

// parseHarbor reads Harbor's Default payload: type PUSH_ARTIFACT and
// event_data.resources[].resource_url (HOST/PROJECT/NAME:TAG).
func parseHarbor(body []byte) (payload, error) {
	var hb struct {
		Type      string     `json:"type"`
		EventData harborData `json:"event_data"`
	}
	if err := decodeAs("Harbor", body, &hb); err != nil {
		return payload{}, err
	}
	return harborPayload(hb.Type == "PUSH_ARTIFACT", hb.EventData)
}

// parseHarborCloudEvent reads Harbor's CloudEvents payload: type
// harbor.artifact.pushed and data.resources[].resource_url.
func parseHarborCloudEvent(body []byte) (payload, error) {
	var ce struct {
		Type string     `json:"type"`
		Data harborData `json:"data"`
	}
	if err := decodeAs("CloudEvents", body, &ce); err != nil {
		return payload{}, err
	}
	if !strings.HasPrefix(ce.Type, "harbor.") {
		return payload{}, fmt.Errorf("%w: a CloudEvent of type %q; only Harbor's are read", errPayload, printable.Cut(ce.Type, 100))
	}
	return harborPayload(ce.Type == "harbor.artifact.pushed", ce.Data)
}

func harborPayload(pushed bool, d harborData) (payload, error) {
	p := payload{Kind: PayloadHarbor}
	if !pushed {
		p.Skipped = max(1, len(d.Resources))
		return p, nil
	}
	var err error
	p.Pushes, err = d.pushes()
	return p, err
}

// parseGitHub reads GitHub's package and registry_package events: action
// published (or updated) of a container package, with
// package_version.package_url (ghcr.io/OWNER/NAME[:TAG]) and the tag in
// package_version.container_metadata.tag.name.
func parseGitHub(body []byte) (payload, error) {
	type pkg struct {
		Name           string `json:"name"`
		Namespace      string `json:"namespace"`
		PackageType    string `json:"package_type"`
		Ecosystem      string `json:"ecosystem"`
		PackageVersion struct {
			PackageURL        string `json:"package_url"`
			ContainerMetadata struct {
				Tag struct {
					Name string `json:"name"`
				} `json:"tag"`
			} `json:"container_metadata"`
		} `json:"package_version"`
		Owner struct {
			Login string `json:"login"`
		} `json:"owner"`
	}
	var gh struct {
		Action          string `json:"action"`
		Package         *pkg   `json:"package"`
		RegistryPackage *pkg   `json:"registry_package"`
	}
	if err := decodeAs("GitHub package", body, &gh); err != nil {
		return payload{}, err
	}
	p := payload{Kind: PayloadGitHub}
	pk := gh.Package
	if pk == nil {
		pk = gh.RegistryPackage
	}
	if pk == nil {
		return payload{}, fmt.Errorf("%w: GitHub event with a null package", errPayload)
	}
	container := func(t string) bool { t = strings.ToLower(t); return t == "container" || t == "docker" }
	if (gh.Action != "published" && gh.Action != "updated") || !(container(pk.PackageType) || container(pk.Ecosystem)) {
		p.Skipped = 1
		return p, nil
	}
	v := pk.PackageVersion
	repo, tag := splitReference(v.PackageURL)
	if repo == "" {
		owner := pk.Namespace
		if owner == "" {
			owner = pk.Owner.Login
		}
		if owner == "" || pk.Name == "" {
			return payload{}, fmt.Errorf("%w: GitHub package event without package_url, or owner and name", errPayload)
		}
		repo = "ghcr.io/" + owner + "/" + pk.Name
	}
	if t := v.ContainerMetadata.Tag.Name; t != "" {
		tag = t
	}
	p.Pushes = []push{{Repository: repo, Tag: tag}}
	return p, nil
}

// parseQuay reads Quay's repository push notification: docker_url
// (HOST/NAMESPACE/NAME) and updated_tags.
func parseQuay(body []byte) (payload, error) {
	var q struct {
		DockerURL   string   `json:"docker_url"`
		UpdatedTags []string `json:"updated_tags"`
	}
	if err := decodeAs("Quay", body, &q); err != nil {
		return payload{}, err
	}
	if q.DockerURL == "" {
		return payload{}, fmt.Errorf("%w: Quay payload without docker_url", errPayload)
	}
	p := payload{Kind: PayloadQuay}
	for _, t := range q.UpdatedTags {
		p.Pushes = append(p.Pushes, push{Repository: q.DockerURL, Tag: t})
	}
	if len(p.Pushes) == 0 {
		p.Pushes = []push{{Repository: q.DockerURL}}
	}
	return p, nil
}

// parseGeneric reads {"repository": "HOST/PATH", "tag": "T"}; the tag is
// optional, and the repository may carry it (HOST/PATH:T).
func parseGeneric(body []byte) (payload, error) {
	var g struct {
		Repository string `json:"repository"`
		Tag        string `json:"tag"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return payload{}, fmt.Errorf("%w: want {\"repository\": \"HOST/PATH\", \"tag\": \"TAG\"}: %v", errPayload, err)
	}
	repo, tag := splitReference(g.Repository)
	if g.Tag != "" {
		tag = g.Tag
	}
	return payload{Kind: PayloadGeneric, Pushes: []push{{Repository: repo, Tag: tag}}}, nil
}
