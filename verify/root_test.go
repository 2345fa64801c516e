package verify

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/imagebump/imagebump/internal/testkit/signed"
)

// tufRepo is a TUF repository on loopback that distributes one
// trusted_root.json, signed with a key the test generates: a stand-in for
// Sigstore's public-good repository, which tests cannot reach.
type tufRepo struct {
	root     []byte // 1.root.json, the client's root of trust
	url      string
	requests atomic.Int64
	down     atomic.Bool // answer 503 to everything

	mu    sync.Mutex
	files map[string][]byte
}

func startTUF(t *testing.T, trustedRoot []byte) *tufRepo {
	t.Helper()
	expires := time.Now().Add(7 * 24 * time.Hour)
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := metadata.KeyFromPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signature.LoadSigner(priv, crypto.Hash(0))
	if err != nil {
		t.Fatal(err)
	}
	targets := metadata.Targets(expires)
	tf, err := metadata.TargetFile().FromBytes("trusted_root.json", trustedRoot, "sha256")
	if err != nil {
		t.Fatal(err)
	}
	targets.Signed.Targets["trusted_root.json"] = tf
	snapshot := metadata.Snapshot(expires)
	timestamp := metadata.Timestamp(expires)
	root := metadata.Root(expires)
	for _, role := range []string{metadata.ROOT, metadata.TARGETS, metadata.SNAPSHOT, metadata.TIMESTAMP} {
		if err := root.Signed.AddKey(key, role); err != nil {
			t.Fatal(err)
		}
	}
	encode := func(sign func(signature.Signer) (*metadata.Signature, error), bytes func(bool) ([]byte, error)) []byte {
		if _, err := sign(signer); err != nil {
			t.Fatal(err)
		}
		b, err := bytes(false)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	h := sha256.Sum256(trustedRoot)
	r := &tufRepo{files: map[string][]byte{
		"/1.root.json":     encode(root.Sign, root.ToBytes),
		"/1.targets.json":  encode(targets.Sign, targets.ToBytes),
		"/1.snapshot.json": encode(snapshot.Sign, snapshot.ToBytes),
		"/timestamp.json":  encode(timestamp.Sign, timestamp.ToBytes),
		"/targets/" + hex.EncodeToString(h[:]) + ".trusted_root.json": trustedRoot,
	}}
	r.root = r.files["/1.root.json"]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if r.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		r.mu.Lock()
		b, ok := r.files[req.URL.Path]
		r.mu.Unlock()
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

func (r *tufRepo) publicGood(cacheDir string) *PublicGood {
	return NewPublicGood(PublicGoodOptions{MirrorURL: r.url, Root: r.root, CacheDir: cacheDir})
}

// TestPublicGood fetches a trusted root through TUF, verifies a keyless
// signature with it, and checks when it asks the repository again.
func TestPublicGood(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	repo := startTUF(t, w.ca.TrustedRoot(t, signed.RootOptions{}))
	cacheDir := t.TempDir()
	pg := repo.publicGood(cacheDir)
	clk := &clock{t: time.Now()}
	pg.now = clk.now

	// A keyless signature verifies against the root fetched through TUF.
	r := startRegistry(t, true)
	image := r.repo(t)
	digest := signed.PushImage(t, r.push, image, "v1")
	signed.SignBundle(t, r.push, image, digest, signed.Spec{CA: w.ca, Subject: subject, Issuer: issuer})
	v, err := New(Options{Keyless: &Keyless{Issuer: issuer, Subject: subject}}, r.remote, WithTrustedRoot(pg))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), image, digest); err != nil {
		t.Fatalf("Verify with the root from TUF: %v", err)
	}
	if repo.requests.Swap(0) == 0 {
		t.Fatal("the first use made no TUF request")
	}

	if _, err := pg.TrustedMaterial(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := repo.requests.Swap(0); n != 0 {
		t.Errorf("a second use within Refresh made %d TUF requests, want 0", n)
	}

	// Another process with the same cache folder needs no request while
	// the cache is fresh.
	if _, err := repo.publicGood(cacheDir).TrustedMaterial(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := repo.requests.Swap(0); n != 0 {
		t.Errorf("a fresh disk cache made %d TUF requests, want 0", n)
	}

	// After Refresh the root is fetched again (from the repository: the
	// disk cache is gone).
	if err := os.RemoveAll(cacheDir); err != nil {
		t.Fatal(err)
	}
	clk.advance(25 * time.Hour)
	if _, err := pg.TrustedMaterial(t.Context()); err != nil {
		t.Fatal(err)
	}
	if repo.requests.Swap(0) == 0 {
		t.Error("no TUF request after Refresh")
	}

	// A failed refresh keeps the root in use, says so in the log, and is
	// not tried again at once.
	var logged bytes.Buffer
	pg.opts.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	repo.down.Store(true)
	if err := os.RemoveAll(cacheDir); err != nil {
		t.Fatal(err)
	}
	clk.advance(25 * time.Hour)
	if m, err := pg.TrustedMaterial(t.Context()); err != nil || m == nil {
		t.Fatalf("TrustedMaterial with the repository down: %v, want the old root", err)
	}
	if !strings.Contains(logged.String(), "keeping the one fetched before") {
		t.Errorf("log %q does not report the failed refresh", logged.String())
	}
	repo.requests.Swap(0)
	clk.advance(refreshRetry / 2)
	if _, err := pg.TrustedMaterial(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := repo.requests.Swap(0); n != 0 {
		t.Errorf("%d TUF requests within the retry delay, want 0", n)
	}
}

func TestPublicGoodFirstFetchFails(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	repo := startTUF(t, w.ca.TrustedRoot(t, signed.RootOptions{}))
	repo.down.Store(true)
	_, err := repo.publicGood(t.TempDir()).TrustedMaterial(t.Context())
	if err == nil {
		t.Fatal("TrustedMaterial succeeded with the repository down")
	}
	for _, want := range []string{"fetching the Sigstore trusted root through TUF from " + repo.url, "set verify.trustedRoot"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	// The Verifier returns that error as is: not a verdict on the image.
	r := startRegistry(t, true)
	image := r.repo(t)
	digest := signed.PushImage(t, r.push, image, "v1")
	signed.SignClassic(t, r.push, image, digest, signed.Spec{CA: w.ca, Subject: subject, Issuer: issuer})
	v, err := New(Options{Keyless: &Keyless{Issuer: issuer, Subject: subject}}, r.remote, WithTrustedRoot(repo.publicGood(t.TempDir())))
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(t.Context(), image, digest)
	if err == nil || errors.Is(err, ErrInvalid) || errors.Is(err, ErrUnsigned) {
		t.Errorf("Verify without a trusted root: %v, want an error that is no verdict", err)
	}
}

func TestPublicGoodCancelled(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	repo := startTUF(t, w.ca.TrustedRoot(t, signed.RootOptions{}))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := repo.publicGood(t.TempDir()).TrustedMaterial(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("TrustedMaterial with a cancelled context: %v, want context.Canceled", err)
	}
	if n := repo.requests.Load(); n != 0 {
		t.Errorf("%d requests reached the repository", n)
	}
}

func TestLoadTrustedRoot(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tr, err := LoadTrustedRoot(w.rootFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.FulcioCertificateAuthorities()) != 1 || len(tr.RekorLogs()) != 1 || len(tr.CTLogs()) != 0 {
		t.Errorf("loaded %d CAs, %d Rekor logs, %d CT logs: want 1, 1, 0",
			len(tr.FulcioCertificateAuthorities()), len(tr.RekorLogs()), len(tr.CTLogs()))
	}
}

// TestPublicGoodCacheUnwritable: where the cache folder cannot be made
// (a read-only root), the trusted root is still fetched, kept in memory,
// and the log says why and what to set.
func TestPublicGoodCacheUnwritable(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	repo := startTUF(t, w.ca.TrustedRoot(t, signed.RootOptions{}))
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{"a folder that cannot be made": filepath.Join(file, "cache")}
	if runtime.GOOS == "linux" {
		// It exists, and no file can be made in it, even by root (as in
		// a read-only mount).
		dirs["a folder no file can be made in"] = "/proc/self"
	}
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			pg := NewPublicGood(PublicGoodOptions{MirrorURL: repo.url, Root: repo.root, CacheDir: dir,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if _, err := pg.TrustedMaterial(t.Context()); err != nil {
				t.Fatalf("TrustedMaterial: %v", err)
			}
			if !strings.Contains(logs.String(), "cannot cache the Sigstore trusted root on disk") || !strings.Contains(logs.String(), "XDG_CACHE_HOME") {
				t.Errorf("log = %q, want a warning saying what to set", logs.String())
			}
		})
	}
}
