package discover

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Reasons a reference cannot be tracked.
var (
	errVariable = errors.New("holds a variable ($VAR, ${VAR} or $(VAR)): the value is decided where the variable is set, so there is nothing here to keep current")
	errTemplate = errors.New("holds a template ({{ ... }}): the value is rendered from elsewhere (Helm values), so there is nothing here to keep current")
	errDigest   = errors.New("pinned by digest with no tag: there is no tag to follow; write name:tag@digest to track the tag and keep the pin")
	errEmpty    = errors.New("empty")
)

// variableRE matches shell-style variables, as docker-compose and Flux's
// post-build substitution read them, and Kubernetes' $(VAR).
var variableRE = lazyRegexp(`\$\{[^}]*\}|\$\([A-Za-z_][A-Za-z0-9_]*\)|\$[A-Za-z_][A-Za-z0-9_]*`)

// digestRE matches an OCI digest.
var digestRE = lazyRegexp(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$`)

// tagRE matches a valid tag.
var tagRE = lazyRegexp(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// untrackable reports why a value cannot be tracked because of what it
// holds: a variable or a template. It returns nil for a plain value.
func untrackable(v string) error {
	switch {
	case strings.Contains(v, "{{"):
		return errTemplate
	case variableRE().MatchString(v):
		return errVariable
	}
	return nil
}

// splitRef splits a whole image reference into its repository, tag and
// digest, as written. A reference with neither tag nor digest has tag "".
func splitRef(s string) (repo, tag, digest string, err error) {
	if err := untrackable(s); err != nil {
		return "", "", "", err
	}
	if s == "" {
		return "", "", "", errEmpty
	}
	repo = s
	if i := strings.IndexByte(repo, '@'); i >= 0 {
		repo, digest = repo[:i], repo[i+1:]
		if !digestRE().MatchString(digest) {
			return "", "", "", fmt.Errorf("not an image reference: %q is not a digest", digest)
		}
	}
	if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
		repo, tag = repo[:i], repo[i+1:]
		if !tagRE().MatchString(tag) {
			return "", "", "", fmt.Errorf("not an image reference: %q is not a tag", tag)
		}
	}
	if err := checkRepository(repo); err != nil {
		return "", "", "", err
	}
	if tag == "" && digest != "" {
		return "", "", "", errDigest
	}
	return repo, tag, digest, nil
}

// checkRepository checks a repository name as written.
func checkRepository(repo string) error {
	if repo == "" {
		return errors.New("not an image reference: no repository")
	}
	if strings.ContainsAny(repo, " \t") || strings.Contains(repo, "://") {
		return fmt.Errorf("not an image reference: %q", repo)
	}
	if _, err := name.NewRepository(repo); err != nil {
		return fmt.Errorf("not an image reference: %w", err)
	}
	return nil
}
