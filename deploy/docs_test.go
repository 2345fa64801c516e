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

// TestDocumentedOverlays builds the overlays that README.md and
// docs/deploy.md tell users to write, with this checkout's folders in
// place of the remote ones and made-up files for those the generators
// read, and checks them as TestKustomizations checks ours; and that they
// replace every placeholder Secret of the base.
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
	}

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
			checkDocumentedBuild(t, fsys, dir)
		})
	}
}

// checkDocumentedBuild builds dir and checks it as TestKustomizations
// checks ours, and that no placeholder Secret of the base is left.
func checkDocumentedBuild(t *testing.T, fsys filesys.FileSystem, dir string) {
	t.Helper()
	b := runKustomize(t, fsys, dir)
	checkNamespace(t, b)
	checkServiceAccounts(t, b)
	tpls := b.podTemplates()
	if len(tpls) != 1 {
		t.Fatalf("%d workloads, want 1", len(tpls))
	}
	for _, pt := range tpls {
		checkPodSecurity(t, pt)
		checkPod(t, b, pt)
	}
	checkServices(t, b, tpls)
	checkWorkloads(t, b)
	for _, s := range b.secrets {
		for k, v := range s.Data {
			if bytes.Contains(v, []byte("REPLACE")) || bytes.Contains(v, []byte("UkVQTEFDRS1NRTpSRVBMQUNFLU1F")) {
				t.Errorf("secret %s key %s is still the base's placeholder", s.Name, k)
			}
		}
	}
}
