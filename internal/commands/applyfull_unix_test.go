//go:build unix

package commands

import (
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
)

// TestApplyUnwritable: apply on a folder it cannot write (a file size
// limit here; a full disk or a read-only folder fails the same writes)
// says that nothing was written and what to do, where it said "No
// changes: every marked field is current", and leaves no temporary file
// in the checkout. apply runs in a child process under the limit; the
// registry runs in this one.
func TestApplyUnwritable(t *testing.T) {
	if args := os.Getenv("IMAGEBUMP_TEST_APPLY_ARGS"); args != "" {
		signal.Ignore(syscall.SIGXFSZ)
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 16, Max: 16}); err != nil {
			t.Fatal(err)
		}
		out, stderr, code := runMain(t, strings.Split(args, "\n")...)
		t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
		return
	}
	host := startMemRegistry(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "imagebump.yaml", "registries:\n  - {host: \""+host+"\", insecure: true}\nimages:\n  - {name: apps:web, repository: "+host+"/acme/web, policy: {semver: \">=1.0.0 <2\"}}\n")
	repo := t.TempDir()
	for _, name := range []string{"a.yaml", "b.yaml"} {
		writeFile(t, repo, name, "image: "+host+"/acme/web:1.0.0 # {\"$imagepolicy\": \"apps:web\"}\n")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestApplyUnwritable$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "IMAGEBUMP_TEST_APPLY_ARGS="+strings.Join([]string{"apply", "-c", cfg, "--repo", repo, "--no-cache"}, "\n"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child: %v\n%s", err, out)
	}
	for _, want := range []string{
		"exit 1\n",
		"No changes written: 2 files could not be written (see the problems: a full disk, a file size limit, or a folder this user may not write), and their fields are not current; free space, raise the limit or make them writable, then apply again.",
		"a.yaml: writing file:",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("apply's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "every marked field is current") {
		t.Errorf("apply says the fields are current:\n%s", out)
	}
	// -o json says so too: applied is false, where it was true.
	cmd = exec.Command(os.Args[0], "-test.run=^TestApplyUnwritable$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "IMAGEBUMP_TEST_APPLY_ARGS="+strings.Join([]string{"apply", "-c", cfg, "--repo", repo, "--no-cache", "-o", "json"}, "\n"))
	if out, err = cmd.CombinedOutput(); err != nil {
		t.Fatalf("the child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"applied": false`) || !strings.Contains(string(out), "writing file:") {
		t.Errorf("apply -o json does not say it did not apply:\n%s", out)
	}
	entries, _ := os.ReadDir(repo)
	if len(entries) != 2 {
		t.Errorf("the checkout holds %d files, want a.yaml and b.yaml alone: %v", len(entries), entries)
	}
}
