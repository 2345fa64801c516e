package gitwriter

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// author is the commit author of every test Update.
var author = Commit{AuthorName: "imagebump", AuthorEmail: "imagebump@example.invalid"}

// seed is the content of every test remote.
var seed = map[string]string{
	"clusters/prod/app.yaml": "image: app:1.0.0\n",
	"clusters/prod/web.yaml": "image: web:1.0.0\n",
	"README.md":              "fleet\n",
}

// writeSecret writes content to a new file and returns its path, with the
// trailing newline that editors add.
func writeSecret(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// setFiles returns an Edit that writes files and reports all of them as
// changed, whether their content moved or not, with message. calls counts
// its calls.
func setFiles(files map[string]string, message string, calls *int) Edit {
	var mu sync.Mutex
	return func(ctx context.Context, dir string) ([]string, string, error) {
		if calls != nil {
			mu.Lock()
			*calls++
			mu.Unlock()
		}
		var changed []string
		for name, content := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, "", err
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				return nil, "", err
			}
			changed = append(changed, name)
		}
		return changed, message, nil
	}
}

// logBuffer collects log output from several goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newLogger returns a debug logger writing to a buffer.
func newLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// mustOpen opens a working copy or fails the test.
func mustOpen(t *testing.T, opts Options) *Repo {
	t.Helper()
	r, err := Open(t.Context(), opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", opts.URL, err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// httpRemote starts an authenticated HTTP server on a new seeded bare
// repository and returns the bare directory, the server and the Auth that
// logs in to it.
func httpRemote(t *testing.T) (string, *testgit.HTTPServer, Auth) {
	t.Helper()
	bare := testgit.NewBare(t, seed)
	s := testgit.StartHTTP(t, bare, true)
	return bare, s, Auth{UsernameFile: writeSecret(t, s.Username), PasswordFile: writeSecret(t, s.Password)}
}

// fileURL returns the file:// URL of a directory.
func fileURL(dir string) string { return "file://" + filepath.ToSlash(dir) }

// mainSHA returns where the bare repository's main points.
func mainSHA(t *testing.T, bare string) string {
	t.Helper()
	return testgit.Refs(t, bare)["refs/heads/main"]
}
