package flux

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/imagebump/imagebump/internal/gittop"
)

// rootedFS is the file system kustomize builds on: the disk, read-only,
// below root alone. Flux's kustomize-controller builds with no load
// restriction (a kustomization may name a file of another folder) on a file
// system confined to the source's root; so does this, with the Git
// checkout holding the path read (or, outside one, that path) as the root.
type rootedFS struct {
	filesys.FileSystem
	root string   // absolute, symbolic links resolved
	read []string // the files read, in order, each once
	// objects are the bytes of the files read that mention Flux's API
	// domain, by path: where the built objects were written.
	objects map[string][]byte
}

// newRootedFS confines kustomize to the checkout holding path.
func newRootedFS(path string) (*rootedFS, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	root := abs
	if top, ok := gittop.Find(abs); ok {
		root = top
	}
	return &rootedFS{FileSystem: filesys.MakeFsOnDisk(), root: root}, nil
}

// errOutsideRoot refuses a path outside the root.
type errOutsideRoot struct{ path, root string }

func (e *errOutsideRoot) Error() string {
	return fmt.Sprintf("%s is outside %s: a kustomization may only read files of the repository it is in, as under Flux", e.path, e.root)
}

// errGitDir refuses a path in a .git folder.
type errGitDir struct{ path string }

func (e *errGitDir) Error() string {
	return fmt.Sprintf("%s is in a .git folder: a kustomization may not read Git's own files (they may hold credentials, such as a CI checkout's token), as under Flux, whose sources carry no .git", e.path)
}

// check returns an error when p, its symbolic links followed, lies
// outside the root, or in a .git folder of it: Flux builds from a source
// artifact without one, and .git/config may hold a checkout's token.
func (f *rootedFS) check(p string) error {
	abs, err := filepath.Abs(p)
	if err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if abs != f.root && !strings.HasPrefix(abs, f.root+string(filepath.Separator)) && f.root != string(filepath.Separator) {
		return &errOutsideRoot{path: p, root: f.root}
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(abs, f.root), string(filepath.Separator))
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if strings.EqualFold(part, ".git") {
			return &errGitDir{path: p}
		}
	}
	return nil
}

var errReadOnly = errors.New("kustomize may not write here")

func (f *rootedFS) Create(string) (filesys.File, error) { return nil, errReadOnly }
func (f *rootedFS) Mkdir(string) error                  { return errReadOnly }
func (f *rootedFS) MkdirAll(string) error               { return errReadOnly }
func (f *rootedFS) RemoveAll(string) error              { return errReadOnly }
func (f *rootedFS) WriteFile(string, []byte) error      { return errReadOnly }

func (f *rootedFS) Open(p string) (filesys.File, error) {
	if err := f.check(p); err != nil {
		return nil, err
	}
	return f.FileSystem.Open(p)
}

func (f *rootedFS) IsDir(p string) bool { return f.check(p) == nil && f.FileSystem.IsDir(p) }

func (f *rootedFS) Exists(p string) bool { return f.check(p) == nil && f.FileSystem.Exists(p) }

func (f *rootedFS) ReadDir(p string) ([]string, error) {
	if err := f.check(p); err != nil {
		return nil, err
	}
	return f.FileSystem.ReadDir(p)
}

func (f *rootedFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	if err := f.check(p); err != nil {
		return "", "", err
	}
	return f.FileSystem.CleanedAbs(p)
}

func (f *rootedFS) Glob(pattern string) ([]string, error) {
	matches, err := f.FileSystem.Glob(pattern)
	if err != nil {
		return nil, err
	}
	out := matches[:0]
	for _, m := range matches {
		if f.check(m) == nil {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *rootedFS) ReadFile(p string) ([]byte, error) {
	if err := f.check(p); err != nil {
		return nil, err
	}
	data, err := f.FileSystem.ReadFile(p)
	if _, seen := f.objects[p]; err == nil && !seen {
		if f.objects == nil {
			f.objects = map[string][]byte{}
		}
		f.read = append(f.read, p)
		f.objects[p] = nil
		if bytes.Contains(data, []byte(fluxDomain)) {
			f.objects[p] = data
		}
	}
	return data, err
}

func (f *rootedFS) Walk(p string, fn filepath.WalkFunc) error {
	if err := f.check(p); err != nil {
		return err
	}
	return f.FileSystem.Walk(p, func(path string, info os.FileInfo, err error) error {
		if err == nil {
			if cerr := f.check(path); cerr != nil {
				if info != nil && info.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		return fn(path, info, err)
	})
}
