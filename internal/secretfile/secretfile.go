// Package secretfile reads one secret (a password, token, passphrase or
// private key) from a file, or from an environment variable when the
// reference is written env:NAME: the two ways imagebump's config references
// secrets. Files are read at each use, so a mounted Kubernetes Secret or a
// rotated file is picked up without a restart.
//
// A secret file must be a regular file (symbolic links to one, as
// Kubernetes mounts them, are fine) of at most MaxSize bytes. It is opened
// without blocking, so a FIFO, a socket or a device named by mistake or by
// malice is refused at once instead of hanging the process; this is why no
// read here needs a context.
package secretfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
)

// MaxSize bounds a secret file: tokens, passwords, SSH and OpenPGP keys
// and Docker configs are far smaller.
const MaxSize = 1 << 20

// ErrNotRegular is returned for a path that is not a regular file (a
// FIFO, socket, device or directory).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned for a file larger than the limit read.
var ErrTooLarge = errors.New("file is too large")

// ErrEmpty is returned for a secret that holds nothing but a line ending.
var ErrEmpty = errors.New("file is empty")

// EnvPrefix starts a reference to an environment variable: env:GIT_TOKEN.
const EnvPrefix = "env:"

// envName is what an environment variable's name may look like.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// IsEnv reports whether ref names an environment variable.
func IsEnv(ref string) bool { return strings.HasPrefix(ref, EnvPrefix) }

// CheckRef reports a malformed env:NAME reference; file paths always pass.
func CheckRef(ref string) error {
	if IsEnv(ref) && !envName.MatchString(strings.TrimPrefix(ref, EnvPrefix)) {
		return fmt.Errorf("%q is not a valid environment variable reference: want env:NAME with NAME made of letters, digits and '_'", ref)
	}
	return nil
}

// Read returns the secret that ref names (a file path, or env:NAME) without
// its trailing line endings ("\n", "\r\n"), as editors, `echo` and a
// here-document leave them: no token, password or key a forge or registry
// issues ends with a line break, and a stray blank line after one would
// otherwise only surface as "credentials refused". Spaces and tabs are
// kept: a password may end with one. Its errors name the path or the
// variable (as Shown gives it), never the content.
func Read(ref string) (string, error) {
	b, err := ReadBytes(ref)
	if err != nil {
		return "", err
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" {
		if IsEnv(ref) {
			return "", fmt.Errorf("environment variable %s: %w", strings.TrimPrefix(ref, EnvPrefix), ErrEmpty)
		}
		return "", ErrEmpty
	}
	return s, nil
}

// ReadBytes returns the secret that ref names as it is, for keys whose
// format is their own (an SSH or OpenPGP private key).
func ReadBytes(ref string) ([]byte, error) {
	if !IsEnv(ref) {
		b, err := ReadFile(ref, MaxSize)
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Path == ref {
			pe.Path = Shown(ref)
		}
		return b, err
	}
	if err := CheckRef(ref); err != nil {
		return nil, err
	}
	name := strings.TrimPrefix(ref, EnvPrefix)
	v, ok := os.LookupEnv(name)
	if !ok {
		return nil, fmt.Errorf("environment variable %s is not set", name)
	}
	return []byte(v), nil
}

// ReadFile returns the content of the regular file at path, opened
// without blocking, or an error wrapping ErrNotRegular for anything else,
// or ErrTooLarge when it holds more than limit bytes. Its errors name the
// path, never the content. Other readers of files that hold secrets or
// come from the config (a Docker config, a CA bundle) use it too.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Stat the open file, not the path: the path may have been replaced
	// between the two.
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, FileType(st.Mode()))}
	}
	if st.Size() > limit {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, st.Size(), limit)}
	}
	// The size may change while reading: read one byte past the limit
	// to notice.
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(b)) > limit {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)}
	}
	return b, nil
}

// FileType names the kind of a file that is not regular, for errors and
// warnings that say why it is not read.
func FileType(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// tokenPrefixes start the tokens of the forges and registries users paste
// most (GitHub, GitLab, Docker Hub, Slack), and a PEM block or a JWT.
var tokenPrefixes = []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "gldt-", "glrt-", "dckr_pat_", "xoxb-", "xoxp-", "-----BEGIN", "eyJ"}

// awsKeyID is an AWS access key ID.
var awsKeyID = regexp.MustCompile(`^A[KS]IA[A-Z0-9]{16}$`)

// LooksInline reports whether ref, the value of a key that takes the path
// of a file holding a secret, looks like a secret pasted in its place: a
// line break, a known token's prefix, an AWS access key ID, base64's
// padding or '+', or a long run of letters and digits that changes
// between upper case, lower case and digits as often as random text does
// (file names, even CamelCase ones, change far less).
func LooksInline(ref string) bool {
	switch {
	case IsEnv(ref):
		return false
	case strings.ContainsAny(ref, "\n\r"):
		return true
	case awsKeyID.MatchString(ref):
		return true
	}
	for _, p := range tokenPrefixes {
		if strings.HasPrefix(ref, p) && len(ref) >= len(p)+12 && !strings.ContainsAny(ref, `/\ `) {
			return true
		}
	}
	if len(ref) < 24 || strings.ContainsAny(ref, ". \\") || strings.HasPrefix(ref, "/") {
		return false // a name with an extension, an absolute path
	}
	class := func(r rune) int {
		switch {
		case 'A' <= r && r <= 'Z':
			return 1
		case 'a' <= r && r <= 'z':
			return 2
		case '0' <= r && r <= '9':
			return 3
		case r == '/' || r == '+' || r == '=' || r == '_' || r == '-':
			return 4
		}
		return -1
	}
	seen := map[int]bool{}
	changes, last := 0, 0
	for i, r := range ref {
		c := class(r)
		if c < 0 {
			return false
		}
		seen[c] = true
		if i > 0 && c != last {
			changes++
		}
		last = c
	}
	if !seen[1] || !seen[2] || !seen[3] {
		return false
	}
	if strings.Contains(ref, "+") || strings.HasSuffix(ref, "=") {
		return true // base64
	}
	random := changes*100 >= len(ref)*38
	if strings.Contains(ref, "/") {
		// A relative path, unless it is as long as an AWS secret key.
		return len(ref) == 40 && random
	}
	return len(ref) >= 32 && random
}

// Hidden stands for a secret file's name that Shown keeps out of a message.
const Hidden = "[file name not shown: it looks like a password or token, not a file name; if it is one, put it in a file and give that file's path]"

// Shown returns ref as an error or a warning may print it: ref itself, or
// Hidden when ref might be a secret pasted where its file's path goes.
// The config refuses what LooksInline finds before any read; Shown also
// hides the shorter passwords it lets through: a file name (the last
// element of the path, as the config makes relative paths absolute) that
// has no extension and mixes upper case, lower case and digits, or holds a
// space or a character other than letters, digits, '.', '_', '-' and '+'.
// A file name hidden by mistake costs little: the message still names the
// config key.
func Shown(ref string) string {
	if IsEnv(ref) {
		return ref
	}
	if LooksInline(ref) {
		return Hidden
	}
	name := ref
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	var upper, lower, digit bool
	for _, r := range name {
		switch {
		case 'A' <= r && r <= 'Z':
			upper = true
		case 'a' <= r && r <= 'z':
			lower = true
		case '0' <= r && r <= '9':
			digit = true
		case r == '.' || r == '_' || r == '-' || r == '+':
		default:
			return Hidden
		}
	}
	if upper && lower && digit && !strings.Contains(name, ".") {
		return Hidden
	}
	return ref
}
