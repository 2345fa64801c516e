// Package ci holds the one rule every test kit follows when a component a
// test needs (a program, a binary, root) is missing: under CI=true the test
// fails, because CI is a fresh machine that scripts/test.sh has equipped
// with everything; on a developer's machine it is skipped, with what to
// install.
package ci

import (
	"os"
	"testing"
)

// Missing stops t for a component it needs that is missing: it fails the
// test when CI=true and skips it otherwise. msg says what is missing and
// how to get it.
func Missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
		return
	}
	t.Skip(msg)
}
