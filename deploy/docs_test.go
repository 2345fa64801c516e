package deploy_test

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// remoteBase is how the documented overlays name a folder of
// deploy/kubernetes: a kustomize remote URL at a release.
var remoteBase = regexp.MustCompile(`https://github\.com/imagebump/imagebump//deploy/(kubernetes/[^?\s]+)\?ref=\S+`)

// documentedOverlay is a kustomization.yaml a document tells users to
// write.
type documentedOverlay struct {
	name string // the document's file name, #N
	text string
}

// documentedOverlays returns the kustomization.yaml files that doc writes
// with `cat > kustomization.yaml <<'DELIMITER'`.
func documentedOverlays(t *testing.T, doc string) []documentedOverlay {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, doc))
	if err != nil {
		t.Fatal(err)
	}
	const start = "cat > kustomization.yaml <<'"
	var out []documentedOverlay
	rest := string(data)
	for {
		i := strings.Index(rest, start)
		if i < 0 {
			return out
		}
		rest = rest[i+len(start):]
		delim, body, ok := strings.Cut(rest, "'\n")
		if !ok {
			t.Fatalf("%s: a heredoc with no delimiter", doc)
		}
		text, after, ok := strings.Cut(body, "\n"+delim+"\n")
		if !ok {
			t.Fatalf("%s: heredoc %s does not end", doc, delim)
		}
		out = append(out, documentedOverlay{name: fmt.Sprintf("%s#%d", path.Base(doc), len(out)+1), text: text + "\n"})
		rest = after
	}
}

// section returns the text of doc's section under heading, up to the
// next heading of that level or above.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, doc))
	if err != nil {
		t.Fatal(err)
	}
	_, s, ok := strings.Cut(string(data), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no heading %q", doc, heading)
	}
	level := heading[:strings.Index(heading, " ")+1]
	for _, h := range []string{"\n## ", "\n" + level} {
		if i := strings.Index(s, h); i >= 0 {
			s = s[:i]
		}
	}
	return s
}

// yamlBlocks returns the ```yaml blocks of text.
func yamlBlocks(text string) []string { return codeBlocks(text, "yaml") }

// codeBlocks returns the fenced blocks of text in language lang.
func codeBlocks(text, lang string) []string {
	var out []string
	for {
		_, rest, ok := strings.Cut(text, "```"+lang+"\n")
		if !ok {
			return out
		}
		block, after, _ := strings.Cut(rest, "```\n")
		out = append(out, block)
		text = after
	}
}

// TestDocumentedOverlays builds the overlays that README.md and
// docs/deploy.md tell users to write, with this checkout's folders in
// place of the remote ones and made-up files for those the generators
// read, and checks them as TestKustomizations checks ours; and that they
// replace every placeholder Secret of the base. The serve overlay is also
// built with deploy.md's SSH section applied: its git section in the
// config and its imagebump-git entry.
func TestDocumentedOverlays(t *testing.T) {
	overlays := append(documentedOverlays(t, "README.md"), documentedOverlays(t, "docs/deploy.md")...)
	if len(overlays) != 3 {
		t.Fatalf("%d documented overlays, want 3 (README's, and deploy.md's for serve and for the CronJob)", len(overlays))
	}
	baseConfig, err := os.ReadFile(filepath.Join(repoRoot, "deploy/kubernetes/base/imagebump.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"imagebump.yaml":     baseConfig,
		"git-token":          []byte("documented-git-token"),
		"docker-config.json": []byte(`{"auths": {"ghcr.io": {"auth": "ZG9jdW1lbnRlZDp0b2tlbg=="}}}`),
		"webhook-secret":     []byte("documented-webhook-secret"),
		"deploy-key":         []byte("documented-deploy-key"),
		"known_hosts":        []byte("github.com ssh-ed25519 AAAA"),
	}

	// deploy.md's SSH section: its config's git section replaces the
	// base config's, and its imagebump-git entry the serve overlay's.
	ssh := yamlBlocks(section(t, "docs/deploy.md", "### Git over SSH with a deploy key"))
	if len(ssh) != 2 {
		t.Fatalf("deploy.md's SSH section has %d yaml blocks, want the git section and the imagebump-git entry", len(ssh))
	}
	var cfg, git map[string]any
	if err := yaml.Unmarshal(baseConfig, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(ssh[0]), &git); err != nil || git["git"] == nil {
		t.Fatalf("deploy.md's SSH section: %q is not a git section: %v", ssh[0], err)
	}
	cfg["git"] = git["git"]
	sshConfig, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const tokenEntry = "  - name: imagebump-git\n    behavior: replace\n    files: [token=git-token]\n"
	serve := overlays[1]
	if !strings.Contains(serve.text, tokenEntry) || !strings.Contains(ssh[1], "name: imagebump-git") {
		t.Fatalf("%s has no %q to replace with the SSH section's %q", serve.name, tokenEntry, ssh[1])
	}
	overlays = append(overlays, documentedOverlay{name: "deploy.md#ssh", text: strings.Replace(serve.text, tokenEntry, ssh[1], 1)})

	fsys, _ := kustomizeFS(t)
	for i, o := range overlays {
		t.Run(o.name, func(t *testing.T) {
			dir := fmt.Sprintf("/documented/%d", i)
			text := remoteBase.ReplaceAllString(o.text, "../../$1")
			if strings.Contains(text, "://") {
				t.Fatalf("a remote resource this test cannot map:\n%s", text)
			}
			write := func(name string, data []byte) {
				if err := fsys.WriteFile(path.Join(dir, name), data); err != nil {
					t.Fatal(err)
				}
			}
			write("kustomization.yaml", []byte(text))
			for name, data := range files {
				write(name, data)
			}
			if strings.HasSuffix(o.name, "#ssh") {
				write("imagebump.yaml", sshConfig)
			}
			checkDocumentedBuild(t, fsys, dir)
		})
	}
}

// checkDocumentedBuild builds dir and checks it as TestKustomizations
// checks ours, and that no placeholder Secret of the base is left.
func checkDocumentedBuild(t *testing.T, fsys filesys.FileSystem, dir string) {
	t.Helper()
	b := runKustomize(t, fsys, dir)
	checkBuild(t, b)
	for _, s := range b.secrets {
		for k, v := range s.Data {
			if bytes.Contains(v, []byte("REPLACE")) || bytes.Contains(v, []byte("UkVQTEFDRS1NRTpSRVBMQUNFLU1F")) {
				t.Errorf("secret %s key %s is still the base's placeholder", s.Name, k)
			}
		}
	}
}
