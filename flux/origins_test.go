package flux

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestKustomizeOrigins: an object of a built folder points at the file it
// was written in, found among the files kustomize read: in another folder
// (a base), and by namespace when two files hold objects of one kind and
// name. Errors pointed at the first file holding the kind and name, and at
// the kustomization for a base's objects.
func TestKustomizeOrigins(t *testing.T) {
	// policy writes an ImagePolicy, with an unknown field when bad.
	policy := func(ns string, bad bool) string {
		extra := ""
		if bad {
			extra = "  bogus: 1\n"
		}
		return "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: web, namespace: " + ns + "}\nspec:\n  imageRepositoryRef: {name: web}\n  policy: {semver: {range: \">=1.0.0\"}}\n" + extra
	}
	repo := func(ns string) string {
		return "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {name: web, namespace: " + ns + "}\nspec: {image: ghcr.io/acme/web}\n"
	}
	t.Run("two namespaces", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "k/kustomization.yaml", "resources: [a.yaml, b.yaml]\n")
		writeFile(t, dir, "k/a.yaml", policy("a", false)+repo("a"))
		b := writeFile(t, dir, "k/b.yaml", policy("b", true)+repo("b"))
		_, err := Load(context.Background(), []string{filepath.Join(dir, "k")}, LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), b+":1, after the kustomize build of") || !strings.Contains(err.Error(), "ImagePolicy b/web") {
			t.Errorf("Load: %v; want the error at %s:1", err, b)
		}
	})
	t.Run("a namespace set and a patch", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "k/kustomization.yaml", "namespace: prod\nresources: [policy.yaml]\npatches:\n  - path: patch.yaml\n")
		res := writeFile(t, dir, "k/policy.yaml", policy("apps", true)+repo("apps"))
		writeFile(t, dir, "k/patch.yaml", "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: web, namespace: apps}\nspec:\n  policy: {semver: {range: \">=2.0.0\"}}\n")
		_, err := Load(context.Background(), []string{filepath.Join(dir, "k")}, LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), res+":1, after") {
			t.Errorf("Load: %v; want the error at %s:1, the resource (read before the patch)", err, res)
		}
	})
	t.Run("a base in another folder", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, ".git/HEAD", "ref: refs/heads/main\n") // the repository's root
		base := writeFile(t, dir, "base/policy.yaml", policy("apps", true)+repo("apps"))
		writeFile(t, dir, "base/kustomization.yaml", "resources: [policy.yaml]\n")
		writeFile(t, dir, "prod/kustomization.yaml", "resources: [../base]\n")
		_, err := Load(context.Background(), []string{filepath.Join(dir, "prod")}, LoadOptions{})
		want := filepath.Join(dir, "prod", "..", "base", "policy.yaml")
		if err == nil || !strings.Contains(err.Error(), filepath.Clean(want)+":1, after") {
			t.Errorf("Load: %v; want the error at %s:1", err, base)
		}
	})
}
