// Package secretfile reads one secret (a password, token, passphrase or
// private key) from a file, or from an environment variable when the
// reference is written env:NAME: the two ways imagebump's config references
// secrets. Files are read at each use, so a mounted Kubernetes Secret or a
// rotated file is picked up without a restart.
package secretfile

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

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
// one trailing line ending ("\n" or "\r\n"), as editors and `echo` leave
// one. Its errors name the path or the variable, never the content.
func Read(ref string) (string, error) {
	b, err := ReadBytes(ref)
	if err != nil {
		return "", err
	}
	s := strings.TrimSuffix(string(b), "\n")
	s = strings.TrimSuffix(s, "\r")
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
		return os.ReadFile(ref)
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
