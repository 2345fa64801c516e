//go:build unix

package flux

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSpecialFiles: a named pipe called *.yaml in a folder blocked Load
// (and the command, past SIGTERM) for as long as nothing wrote to it. A
// folder's pipes and symbolic links are now left unread with a warning
// each; in a folder built with kustomize, only what the kustomization
// names is read. A pipe named alone is read.
func TestSpecialFiles(t *testing.T) {
	for _, kustomized := range []bool{false, true} {
		dir := t.TempDir()
		writeFile(t, dir, "repo.yaml", repoYAML)
		if kustomized {
			writeFile(t, dir, "kustomization.yaml", "resources: [repo.yaml]\n")
		}
		pipe := filepath.Join(dir, "pipe.yaml")
		if err := syscall.Mkfifo(pipe, 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, "link.yaml")
		if err := os.Symlink(filepath.Join(dir, "repo.yaml"), link); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		done := make(chan struct{})
		var set *Set
		var err error
		go func() {
			defer close(done)
			set, err = Load(ctx, []string{dir}, LoadOptions{})
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			// Unblock the read, so the test ends.
			if f, err := os.OpenFile(pipe, os.O_WRONLY, 0); err == nil {
				f.Close()
			}
			<-done
			t.Fatalf("kustomized %v: Load blocked on a named pipe", kustomized)
		}
		cancel()
		if err != nil {
			t.Fatalf("kustomized %v: %v", kustomized, err)
		}
		if len(set.Report.Objects) != 1 {
			t.Errorf("kustomized %v: read %v, want the ImageRepository once", kustomized, set.Report.Objects)
		}
		if kustomized {
			continue // kustomize reads what the kustomization lists
		}
		var notes []string
		for _, n := range set.Report.Notes {
			notes = append(notes, n.String())
		}
		got := strings.Join(notes, "\n")
		for _, want := range []string{
			pipe + ":1: warning: not read: not a regular file (a FIFO)",
			link + ":1: warning: not read: a symbolic link",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("notes lack %q:\n%s", want, got)
			}
		}
	}
	// A named pipe named alone is read, as <(kubectl get ... -o yaml) is.
	dir := t.TempDir()
	pipe := filepath.Join(dir, "objects.yaml")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		if f, err := os.OpenFile(pipe, os.O_WRONLY, 0); err == nil {
			f.WriteString(repoYAML)
			f.Close()
		}
	}()
	set, err := Load(context.Background(), []string{pipe}, LoadOptions{})
	if err != nil || len(set.Report.Objects) != 1 {
		t.Errorf("Load of a named pipe: %v, %v; want the ImageRepository", set, err)
	}
}
