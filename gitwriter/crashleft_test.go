package gitwriter

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// TestOpenRemovesPartialPacks: the part of a pack that a cycle killed
// while it fetched or committed left in the working copy is removed by
// the next Open, which holds the working copy alone, once it has not
// changed for leftAge; before, only a fold removed it, an hour old at
// least, and a crash loop piled them up.
func TestOpenRemovesPartialPacks(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	wd := t.TempDir()
	opts := Options{URL: fileURL(bare), Workdir: wd}
	openClose(t, opts)
	packDir := filepath.Join(wd, ".git", "objects", "pack")
	left := []string{"tmp_pack_3507458405", "tmp_idx_12"}
	for _, name := range left {
		if err := os.WriteFile(filepath.Join(packDir, name), []byte("PACK part"), 0o444); err != nil {
			t.Fatal(err)
		}
		leaveOld(t, filepath.Join(packDir, name))
	}
	// A part written just now may be a running git's (a fetch an
	// operator runs there): it stays for a later Open.
	young := filepath.Join(packDir, "tmp_pack_being_written")
	if err := os.WriteFile(young, []byte("PACK"), 0o444); err != nil {
		t.Fatal(err)
	}
	openClose(t, opts)
	for _, name := range left {
		if _, err := os.Lstat(filepath.Join(packDir, name)); !os.IsNotExist(err) {
			t.Errorf("%s is still there after Open (%v)", name, err)
		}
	}
	if _, err := os.Lstat(young); err != nil {
		t.Errorf("Open removed the part of a pack written just now: %v", err)
	}
	leaveOld(t, young)
	openClose(t, opts)
	if _, err := os.Lstat(young); !os.IsNotExist(err) {
		t.Errorf("%s is still there after Open, unchanged for a minute (%v)", young, err)
	}
	if got := testgit.Refs(t, filepath.Join(wd, ".git"))["refs/remotes/origin/main"]; got != mainSHA(t, bare) {
		t.Errorf("the working copy tracks %s, want %s", got, mainSHA(t, bare))
	}
}
