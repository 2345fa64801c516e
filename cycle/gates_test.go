package cycle

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/internal/testkit/signed"
	"github.com/imagebump/imagebump/internal/testkit/testregistry"
	"github.com/imagebump/imagebump/registry"
)

// pushCreated pushes a random image created at `at` to repo:tag and returns
// its digest.
func pushCreated(t *testing.T, opts []remote.Option, repo, tag string, at time.Time) string {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.CreatedAt(img, v1.Time{Time: at}); err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(repo+":"+tag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, opts...); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return d.String()
}

// gateSetup starts the real distribution registry, returns a registry
// client for it and a checkout whose one marker names default:app.
func gateSetup(t *testing.T) (*testregistry.Server, *registry.Client, []remote.Option, string) {
	t.Helper()
	srv := testregistry.Start(t, testregistry.Options{Version: testregistry.V2})
	client, err := registry.New(registry.Options{Hosts: []registry.Host{{Host: srv.Host, Insecure: true}}})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "app.yaml"), []byte("image: "+srv.Host+"/app:1.0.0 # {\"$imagepolicy\": \"default:app\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv, client, srv.RemoteOptions(context.Background()), root
}

func heldTags(hb []HeldBack) []string {
	var out []string
	for _, h := range hb {
		out = append(out, h.Tag+" "+string(h.Gate))
	}
	return out
}

// TestSignatureGate: a policy whose newest tags are unsigned or wrongly
// signed picks the newest tag with a valid signature, in either of cosign's
// formats, against the real registry; the tags held back say why.
func TestSignatureGate(t *testing.T) {
	srv, client, opts, root := gateSetup(t)
	repo := srv.Host + "/app"
	key, other := signed.NewKey(t), signed.NewKey(t)
	old := time.Now().Add(-30 * 24 * time.Hour)
	for _, tt := range []struct {
		tag  string
		sign func(digest string)
	}{
		{"1.0.0", func(d string) { signed.SignClassic(t, opts, repo, d, signed.Spec{Key: key}) }},
		{"1.1.0", func(d string) { signed.SignBundle(t, opts, repo, d, signed.Spec{Key: key}) }},
		{"1.2.0", func(string) {}}, // unsigned
		{"1.3.0", func(d string) { signed.SignClassic(t, opts, repo, d, signed.Spec{Key: other}) }},
		{"1.4.0", func(d string) { signed.SignClassic(t, opts, repo, d, signed.Spec{Key: key, Tamper: true}) }},
		{"1.5.0", func(d string) {
			signed.SignClassic(t, opts, repo, d, signed.Spec{Key: other})
			signed.SignBundle(t, opts, repo, d, signed.Spec{Key: other})
		}},
	} {
		tt.sign(pushCreated(t, opts, repo, tt.tag, old))
	}
	pub := key.WritePublic(t, t.TempDir(), "cosign.pub")
	cfg, err := config.Parse([]byte(fmt.Sprintf("images:\n  - name: app\n    repository: %s\n    policy: {semver: \">=1.0.0\"}\n    verify: {key: %s}\n", repo, pub)), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	gates := NewGates(nil, nil)
	rep, err := Run(t.Context(), Options{Config: cfg, Registry: client, Root: root, Gates: gates})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Policies[0]
	if p.Err != nil {
		t.Fatal(p.Err)
	}
	if p.Latest() != "1.1.0" {
		t.Errorf("picked %q, want 1.1.0 (the newest with a valid signature)", p.Latest())
	}
	want := []string{"1.5.0 invalid signature", "1.4.0 invalid signature", "1.3.0 invalid signature", "1.2.0 unsigned"}
	if diff := cmp.Diff(heldTags(p.HeldBack), want); diff != "" {
		t.Errorf("held back (-got +want):\n%s", diff)
	}
	// Each signature found says why it was refused.
	if d := p.HeldBack[0].Detail; !strings.HasPrefix(d, "2 found: ") || strings.Count(d, "bad signature") != 2 {
		t.Errorf("1.5.0, signed twice by another key, held back as %q; want both reasons", d)
	}
	if len(rep.Changes) != 1 || rep.Changes[0].New != repo+":1.1.0" {
		t.Errorf("changes = %+v", rep.Changes)
	}

	// A second cycle with the same Gates verifies from its cache: the
	// signed pick costs no signature request.
	counting := &countingGateRegistry{GateRegistry: client}
	if _, err := Run(t.Context(), Options{Config: cfg, Registry: counting, Root: root, Gates: gates}); err != nil {
		t.Fatal(err)
	}
	if n := counting.fetches(); n != 0 {
		t.Errorf("a second cycle fetched %d manifests or blobs for signatures, want 0", n)
	}
}

// TestAgeGate: with minAge 24h, a tag whose image is an hour old is not a
// candidate yet; the older one is picked and plan says when the new one
// becomes a candidate.
func TestAgeGate(t *testing.T) {
	srv, client, opts, root := gateSetup(t)
	repo := srv.Host + "/app"
	now := time.Now()
	pushCreated(t, opts, repo, "1.0.0", now.Add(-72*time.Hour))
	pushCreated(t, opts, repo, "1.1.0", now.Add(-48*time.Hour))
	young := now.Add(-time.Hour).Truncate(time.Second)
	pushCreated(t, opts, repo, "1.2.0", young)
	cfg := minAgeConfig(t, repo)
	rep, err := Run(t.Context(), Options{Config: cfg, Registry: client, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Policies[0]
	if p.Err != nil || p.Latest() != "1.1.0" {
		t.Fatalf("picked %q (%v), want 1.1.0", p.Latest(), p.Err)
	}
	if len(p.HeldBack) != 1 || p.HeldBack[0].Tag != "1.2.0" || p.HeldBack[0].Gate != GateAge || !p.HeldBack[0].Until.Equal(young.Add(24*time.Hour)) {
		t.Errorf("held back = %+v, want 1.2.0 too young until %s", p.HeldBack, young.Add(24*time.Hour))
	}
	// A day later, by the clock the cycle is given, it is a candidate.
	later := func() time.Time { return now.Add(24 * time.Hour) }
	rep, err = Run(t.Context(), Options{Config: cfg, Registry: client, Root: root, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Policies[0].Latest(); got != "1.2.0" {
		t.Errorf("a day later picked %q, want 1.2.0", got)
	}
}

// TestGateFailureFailsThePolicy: when a gate cannot be checked (the image
// records no creation time), the policy fails rather than let the tag
// through, and its marker stays.
func TestGateFailureFailsThePolicy(t *testing.T) {
	srv, client, opts, root := gateSetup(t)
	repo := srv.Host + "/app"
	signed.PushImage(t, opts, repo, "1.1.0") // no creation time recorded
	cfg, err := config.Parse([]byte(fmt.Sprintf("images:\n  - name: app\n    repository: %s\n    policy: {semver: \">=1.0.0\"}\n    minAge: 1h\n", repo)), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), Options{Config: cfg, Registry: client, Root: root, Write: true})
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Policies[0]; p.Err == nil || !strings.Contains(p.Err.Error(), "records no creation time") ||
		!strings.Contains(p.Err.Error(), repo+"@sha256:") || !strings.Contains(p.Err.Error(), "or remove minAge from the policy") {
		t.Errorf("policy error = %v, want the gate's, naming the image by digest and what to do", p.Err)
	}
	if len(rep.Changes) != 0 {
		t.Errorf("changes = %v, want none", rep.Changes)
	}
}

// TestAgeGateWithVerify: a policy with both minAge and verify holds back a
// tag that is signed but too young; a signature does not excuse the age.
// The bug it guards against: a young, signed image rolled out before the
// minAge the user asked for.
func TestAgeGateWithVerify(t *testing.T) {
	srv, client, opts, root := gateSetup(t)
	repo := srv.Host + "/app"
	key := signed.NewKey(t)
	now := time.Now()
	sign := func(d string) { signed.SignClassic(t, opts, repo, d, signed.Spec{Key: key}) }
	sign(pushCreated(t, opts, repo, "1.0.0", now.Add(-72*time.Hour)))
	pushCreated(t, opts, repo, "1.1.0", now.Add(-48*time.Hour)) // old enough, unsigned
	young := now.Add(-time.Hour).Truncate(time.Second)
	sign(pushCreated(t, opts, repo, "1.2.0", young))
	pub := key.WritePublic(t, t.TempDir(), "cosign.pub")
	cfg, err := config.Parse([]byte(fmt.Sprintf("images:\n  - name: app\n    repository: %s\n    policy: {semver: \">=1.0.0\"}\n    minAge: 24h\n    verify: {key: %s}\n", repo, pub)), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), Options{Config: cfg, Registry: client, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Policies[0]
	if p.Err != nil || p.Latest() != "1.0.0" {
		t.Fatalf("picked %q (%v), want 1.0.0, the newest both old enough and signed", p.Latest(), p.Err)
	}
	want := []string{"1.2.0 " + string(GateAge), "1.1.0 " + string(GateUnsigned)}
	if diff := cmp.Diff(heldTags(p.HeldBack), want); diff != "" {
		t.Errorf("held back (-got +want):\n%s", diff)
	}
	if until := young.Add(24 * time.Hour); len(p.HeldBack) > 0 && !p.HeldBack[0].Until.Equal(until) {
		t.Errorf("1.2.0 held until %s, want %s", p.HeldBack[0].Until, until)
	}
}

// TestSignatureLookupFailureFailsThePolicy: when the registry fails (HTTP
// 500) while the verify gate looks for a signature, in either of cosign's
// places, the policy fails with that error; the tag, whose signature was
// never checked, is not picked and no marker moves. The bug it guards
// against: an unverified image rolled out because the registry hiccupped.
func TestSignatureLookupFailureFailsThePolicy(t *testing.T) {
	for _, tt := range []struct {
		name string
		fail func(op, ref string) bool
	}{
		{"signature tag", func(op, ref string) bool { return op == "manifest" && strings.HasSuffix(ref, ".sig") }},
		{"referrers", func(op, _ string) bool { return op == "referrers" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, client, opts, root := gateSetup(t)
			repo := srv.Host + "/app"
			pushCreated(t, opts, repo, "1.1.0", time.Now().Add(-72*time.Hour)) // unsigned
			pub := signed.NewKey(t).WritePublic(t, t.TempDir(), "cosign.pub")
			cfg, err := config.Parse([]byte(fmt.Sprintf("images:\n  - name: app\n    repository: %s\n    policy: {semver: \">=1.0.0\"}\n    verify: {key: %s}\n", repo, pub)), "imagebump.yaml")
			if err != nil {
				t.Fatal(err)
			}
			reg := &failingGateRegistry{GateRegistry: client, fail: tt.fail}
			rep, err := Run(t.Context(), Options{Config: cfg, Registry: reg, Root: root, Write: true})
			if err != nil {
				t.Fatal(err)
			}
			if reg.failed == 0 {
				t.Fatal("the signature lookup never reached the failing call; the test checks nothing")
			}
			p := rep.Policies[0]
			var re *registry.Error
			if p.Err == nil || !errors.As(p.Err, &re) || re.Status != http.StatusInternalServerError ||
				!strings.Contains(p.Err.Error(), "checking the signature of 1.1.0") {
				t.Errorf("policy error = %v (picked %q); want the registry's 500 while checking the signature of 1.1.0", p.Err, p.Selection.Latest)
			}
			if len(rep.Changes) != 0 {
				t.Errorf("changes = %+v, want none", rep.Changes)
			}
			if got, err := os.ReadFile(filepath.Join(root, "app.yaml")); err != nil || !strings.Contains(string(got), "/app:1.0.0 ") {
				t.Errorf("app.yaml = %q (%v), want the marker left at 1.0.0", got, err)
			}
		})
	}
}

// failingGateRegistry answers with a server error (HTTP 500) the manifest
// or referrers requests fail selects.
type failingGateRegistry struct {
	GateRegistry
	fail   func(op, ref string) bool
	failed int
}

func (f *failingGateRegistry) serverError(repo, ref string) error {
	f.failed++
	return &registry.Error{Op: "fetch", Repository: repo, Tag: ref, Kind: registry.KindServer, Status: http.StatusInternalServerError,
		Attempts: 1, Err: errors.New("500 Internal Server Error")}
}

func (f *failingGateRegistry) Manifest(ctx context.Context, repo, ref string) (registry.Manifest, error) {
	if f.fail("manifest", ref) {
		return registry.Manifest{}, f.serverError(repo, ref)
	}
	return f.GateRegistry.Manifest(ctx, repo, ref)
}

func (f *failingGateRegistry) Referrers(ctx context.Context, repo, digest, artifactType string) ([]v1.Descriptor, error) {
	if f.fail("referrers", digest) {
		return nil, f.serverError(repo, digest)
	}
	return f.GateRegistry.Referrers(ctx, repo, digest, artifactType)
}

// countingGateRegistry counts the fetches signature checks make.
type countingGateRegistry struct {
	GateRegistry
	calls []string
}

func (c *countingGateRegistry) Manifest(ctx context.Context, repo, ref string) (registry.Manifest, error) {
	c.calls = append(c.calls, "manifest "+ref)
	return c.GateRegistry.Manifest(ctx, repo, ref)
}

func (c *countingGateRegistry) Blob(ctx context.Context, repo, digest string) ([]byte, error) {
	c.calls = append(c.calls, "blob "+digest)
	return c.GateRegistry.Blob(ctx, repo, digest)
}

func (c *countingGateRegistry) Referrers(ctx context.Context, repo, digest, artifactType string) ([]v1.Descriptor, error) {
	c.calls = append(c.calls, "referrers "+digest)
	return c.GateRegistry.Referrers(ctx, repo, digest, artifactType)
}

func (c *countingGateRegistry) fetches() int { return len(c.calls) }

// TestGateCheckLimit: when the MaxGateChecks best tags are all held back,
// the policy fails saying that the gates stopped there and tags below were
// never checked (a passing 1.0.0 among them), not that every candidate was
// held back.
func TestGateCheckLimit(t *testing.T) {
	srv, client, opts, root := gateSetup(t)
	repo := srv.Host + "/app"
	now := time.Now()
	pushCreated(t, opts, repo, "1.0.0", now.Add(-72*time.Hour))
	for i := 1; i <= MaxGateChecks+1; i++ {
		pushCreated(t, opts, repo, fmt.Sprintf("1.%d.0", i), now.Add(-time.Hour))
	}
	cfg := minAgeConfig(t, repo)
	rep, err := Run(t.Context(), Options{Config: cfg, Registry: client, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Policies[0]
	if p.Err == nil || !strings.Contains(p.Err.Error(), fmt.Sprintf("the %d best tags were all held back, and the gates stop there, so tags below them were never checked", MaxGateChecks)) {
		t.Errorf("policy error = %v; want the gates' limit named", p.Err)
	}
	if len(p.HeldBack) != MaxGateChecks {
		t.Errorf("%d held back, want %d", len(p.HeldBack), MaxGateChecks)
	}
}

// minAgeConfig is a config of one policy, default:app over repo, semver
// >=1.0.0, with minAge 24h.
func minAgeConfig(t *testing.T, repo string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf("images:\n  - name: app\n    repository: %s\n    policy: {semver: \">=1.0.0\"}\n    minAge: 24h\n", repo)), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestGatesCheckThePinnedDigest: with digest ifNotPresent, a marker that
// pins a digest beside the pick's tag keeps it only when that digest is
// the tag's of today or passes the gates itself: the markers deploy the
// digest, not the tag. A young build pinned by hand under the tag moves to
// today's; an older build that passes stays (ifNotPresent's point); one
// the registry no longer has moves (the policy failed on it every cycle).
func TestGatesCheckThePinnedDigest(t *testing.T) {
	srv, client, opts, root := gateSetup(t)
	repo := srv.Host + "/app"
	now := time.Now()
	olderDigest := pushCreated(t, opts, repo, "1.1.0", now.Add(-96*time.Hour))
	youngDigest := pushCreated(t, opts, repo, "1.1.0", now.Add(-time.Hour))
	oldDigest := pushCreated(t, opts, repo, "1.1.0", now.Add(-72*time.Hour)) // the tag now names an old build
	cfg, err := config.Parse([]byte(fmt.Sprintf("images:\n  - name: app\n    repository: %s\n    policy: {semver: \">=1.0.0\"}\n    minAge: 24h\n    digest: ifNotPresent\n", repo)), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, pinned, want string
	}{
		{"a young build pinned", youngDigest, oldDigest},
		{"today's build pinned", oldDigest, oldDigest},
		{"an older build that passes, pinned", olderDigest, olderDigest},
		// Untagged builds a registry's cleanup removed.
		{"a build gone from the registry", "sha256:" + strings.Repeat("0", 64), oldDigest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(root, "app.yaml")
			if err := os.WriteFile(file, []byte("image: "+repo+":1.1.0@"+tt.pinned+" # {\"$imagepolicy\": \"default:app\"}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := Run(t.Context(), Options{Config: cfg, Registry: client, Root: root})
			if err != nil {
				t.Fatal(err)
			}
			p := rep.Policies[0]
			if p.Err != nil || p.Latest() != "1.1.0" || p.Digest != tt.want {
				t.Fatalf("picked %s@%s (%v), want 1.1.0@%s", p.Latest(), p.Digest, p.Err, tt.want)
			}
			if moved := tt.pinned != tt.want; moved != (len(rep.Changes) == 1) {
				t.Errorf("changes %v; want one only when the pinned digest moves", rep.Changes)
			}
		})
	}
}
