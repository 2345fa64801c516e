package verify

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/internal/testkit/signed"
)

const (
	issuer  = "https://oidc.example.com"
	subject = "ci@example.com"
	// otherDigest is a digest no test image has.
	otherDigest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
)

// world is the keys, CAs and files one test signs and verifies with.
type world struct {
	key, otherKey    *signed.Key
	ca, otherCA      *signed.CA
	keyFile          string // key's public half
	bothKeysFile     string // otherKey's and key's, as during a rotation
	rootFile         string // ca's trusted root, no CT logs
	rootWithCTLogs   string // ca's trusted root listing its CT log
	keylessExact     Options
	keylessWithRoots func(root string) Options
}

func newWorld(t *testing.T) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{
		key:      signed.NewKey(t),
		otherKey: signed.NewKey(t),
		ca:       signed.NewCA(t),
		otherCA:  signed.NewCA(t),
	}
	w.keyFile = w.key.WritePublic(t, dir, "cosign.pub")
	w.bothKeysFile = filepath.Join(dir, "both.pub")
	both := append(w.otherKey.PublicPEM(t), w.key.PublicPEM(t)...)
	if err := os.WriteFile(w.bothKeysFile, both, 0o644); err != nil {
		t.Fatal(err)
	}
	w.rootFile = w.ca.WriteTrustedRoot(t, dir, "trusted_root.json", signed.RootOptions{})
	w.rootWithCTLogs = w.ca.WriteTrustedRoot(t, dir, "trusted_root_ct.json", signed.RootOptions{CTLogs: true})
	w.keylessExact = Options{Keyless: &Keyless{Issuer: issuer, Subject: subject}, TrustedRoot: w.rootFile}
	return w
}

// sign pushes one signature of digest in format.
func sign(t *testing.T, r *testRegistry, format Format, repo, digest string, s signed.Spec) {
	t.Helper()
	switch format {
	case FormatClassic:
		signed.SignClassic(t, r.push, repo, digest, s)
	case FormatBundle:
		signed.SignBundle(t, r.push, repo, digest, s)
	default:
		t.Fatalf("unknown format %v", format)
	}
}

// unsigned is the want of a case whose digest carries no signature.
const unsigned Reason = -1

// TestVerify signs an image pushed to a registry on loopback, in each
// format, and checks the verdict of Verify.
func TestVerify(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := startRegistry(t, true)
	keyless := func(mod func(*Options)) func(*world) Options {
		return func(w *world) Options {
			o := w.keylessExact
			k := *o.Keyless
			o.Keyless = &k
			if mod != nil {
				mod(&o)
			}
			return o
		}
	}
	byKey := func(w *world) Options { return Options{Key: w.keyFile} }
	ci := func(w *world) signed.Spec { return signed.Spec{CA: w.ca, Subject: subject, Issuer: issuer} }
	with := func(base func(*world) signed.Spec, mod func(*signed.Spec)) func(*world) signed.Spec {
		return func(w *world) signed.Spec {
			s := base(w)
			mod(&s)
			return s
		}
	}
	keySpec := func(w *world) signed.Spec { return signed.Spec{Key: w.key} }

	tests := []struct {
		name   string
		policy func(*world) Options
		sigs   []func(*world) signed.Spec
		want   []Reason // nil: passes
		check  func(t *testing.T, w *world, res Result, verr *Error)
	}{
		{
			name: "key valid", policy: byKey, sigs: []func(*world) signed.Spec{keySpec},
			check: func(t *testing.T, w *world, res Result, _ *Error) {
				if res.KeyID == "" || res.Issuer != "" {
					t.Errorf("result %+v: want a key ID and no issuer", res)
				}
			},
		},
		{name: "key unsigned", policy: byKey, want: []Reason{unsigned}},
		{
			name: "key tampered payload", policy: byKey,
			sigs: []func(*world) signed.Spec{with(keySpec, func(s *signed.Spec) { s.Tamper = true })},
			want: []Reason{ReasonBadSignature},
		},
		{
			name: "key signature for another digest", policy: byKey,
			sigs: []func(*world) signed.Spec{with(keySpec, func(s *signed.Spec) { s.SignedDigest = otherDigest })},
			want: []Reason{ReasonDigestMismatch},
			check: func(t *testing.T, _ *world, _ Result, verr *Error) {
				if got := verr.Signatures[0].SignedDigest; got != otherDigest {
					t.Errorf("SignedDigest = %q, want %q", got, otherDigest)
				}
			},
		},
		{
			name: "wrong key", policy: byKey,
			sigs: []func(*world) signed.Spec{func(w *world) signed.Spec { return signed.Spec{Key: w.otherKey} }},
			want: []Reason{ReasonBadSignature},
		},
		{
			name:   "second key of a rotation",
			policy: func(w *world) Options { return Options{Key: w.bothKeysFile} },
			sigs:   []func(*world) signed.Spec{keySpec},
		},
		{name: "key policy keyless signature", policy: byKey, sigs: []func(*world) signed.Spec{ci}, want: []Reason{ReasonBadSignature}},
		{
			name: "one bad one good", policy: byKey,
			sigs: []func(*world) signed.Spec{func(w *world) signed.Spec { return signed.Spec{Key: w.otherKey} }, keySpec},
		},
		{
			name: "two bad", policy: byKey,
			sigs: []func(*world) signed.Spec{
				func(w *world) signed.Spec { return signed.Spec{Key: w.otherKey} },
				with(keySpec, func(s *signed.Spec) { s.SignedDigest = otherDigest }),
			},
			want: []Reason{ReasonBadSignature, ReasonDigestMismatch},
		},
		{
			name: "keyless valid", policy: keyless(nil), sigs: []func(*world) signed.Spec{ci},
			check: func(t *testing.T, _ *world, res Result, _ *Error) {
				if res.Issuer != issuer || res.Subject != subject || res.KeyID != "" {
					t.Errorf("result %+v: want issuer %q, subject %q, no key", res, issuer, subject)
				}
			},
		},
		{name: "keyless unsigned", policy: keyless(nil), want: []Reason{unsigned}},
		{
			name: "keyless regexps",
			policy: keyless(func(o *Options) {
				o.Keyless = &Keyless{IssuerRegexp: `https://oidc\.example\.(com|org)`, SubjectRegexp: `[a-z]+@example\.com`}
			}),
			sigs: []func(*world) signed.Spec{ci},
		},
		{
			name: "keyless regexp is anchored",
			policy: keyless(func(o *Options) {
				o.Keyless = &Keyless{Issuer: issuer, SubjectRegexp: `example\.com`}
			}),
			sigs: []func(*world) signed.Spec{ci},
			want: []Reason{ReasonIdentity},
		},
		{
			name: "keyless wrong subject", policy: keyless(nil),
			sigs: []func(*world) signed.Spec{with(ci, func(s *signed.Spec) { s.Subject = "eve@example.org" })},
			want: []Reason{ReasonIdentity},
			check: func(t *testing.T, _ *world, _ Result, verr *Error) {
				se := verr.Signatures[0]
				if se.Subject != "eve@example.org" || se.Issuer != issuer {
					t.Errorf("seen issuer %q, subject %q: want %q, %q", se.Issuer, se.Subject, issuer, "eve@example.org")
				}
				for _, s := range []string{`"eve@example.org"`, `want issuer "` + issuer + `", subject "` + subject + `"`} {
					if !strings.Contains(verr.Error(), s) {
						t.Errorf("error %q does not say %s", verr, s)
					}
				}
			},
		},
		{
			name: "keyless wrong issuer", policy: keyless(nil),
			sigs: []func(*world) signed.Spec{with(ci, func(s *signed.Spec) { s.Issuer = "https://accounts.example.org" })},
			want: []Reason{ReasonIdentity},
		},
		{
			name: "keyless tampered payload", policy: keyless(nil),
			sigs: []func(*world) signed.Spec{with(ci, func(s *signed.Spec) { s.Tamper = true })},
			want: []Reason{ReasonBadSignature},
		},
		{
			name: "keyless signature for another digest", policy: keyless(nil),
			sigs: []func(*world) signed.Spec{with(ci, func(s *signed.Spec) { s.SignedDigest = otherDigest })},
			want: []Reason{ReasonDigestMismatch},
		},
		{
			name: "keyless signed after the certificate expired", policy: keyless(nil),
			sigs: []func(*world) signed.Spec{with(ci, func(s *signed.Spec) { s.SignedAt = time.Now().Add(30 * time.Minute) })},
			want: []Reason{ReasonExpired},
			check: func(t *testing.T, _ *world, _ Result, verr *Error) {
				se := verr.Signatures[0]
				if !se.SignedAt.After(se.NotAfter) {
					t.Errorf("signed at %v, certificate valid %v to %v: want a time after the window", se.SignedAt, se.NotBefore, se.NotAfter)
				}
			},
		},
		{
			name: "keyless signed before the certificate", policy: keyless(nil),
			sigs: []func(*world) signed.Spec{with(ci, func(s *signed.Spec) { s.SignedAt = time.Now().Add(-30 * time.Minute) })},
			want: []Reason{ReasonExpired},
		},
		{
			name: "keyless expired despite a timestamp in the window", policy: keyless(nil),
			sigs: []func(*world) signed.Spec{with(ci, func(s *signed.Spec) {
				s.SignedAt, s.Timestamp = time.Now().Add(30*time.Minute), true
			})},
			want: []Reason{ReasonExpired},
		},
		{
			name: "keyless without transparency log entry", policy: keyless(nil),
			sigs: []func(*world) signed.Spec{with(ci, func(s *signed.Spec) { s.NoTlog, s.Timestamp = true, true })},
			want: []Reason{ReasonTransparencyLog},
		},
		{
			name:   "keyless timestamp instead of transparency log",
			policy: keyless(func(o *Options) { o.InsecureIgnoreTlog = true }),
			sigs:   []func(*world) signed.Spec{with(ci, func(s *signed.Spec) { s.NoTlog, s.Timestamp = true, true })},
		},
		{
			name:   "keyless neither transparency log nor timestamp",
			policy: keyless(func(o *Options) { o.InsecureIgnoreTlog = true }),
			sigs:   []func(*world) signed.Spec{with(ci, func(s *signed.Spec) { s.NoTlog = true })},
			want:   []Reason{ReasonTimestamp},
		},
		{
			name: "keyless from another Sigstore", policy: keyless(nil),
			sigs: []func(*world) signed.Spec{with(ci, func(s *signed.Spec) { s.CA = w.otherCA })},
			want: []Reason{ReasonTransparencyLog},
		},
		{
			name:   "keyless without SCT where the root has CT logs",
			policy: keyless(func(o *Options) { o.TrustedRoot = w.rootWithCTLogs }),
			sigs:   []func(*world) signed.Spec{ci},
			want:   []Reason{ReasonUntrusted},
		},
		{name: "keyless policy key signature", policy: keyless(nil), sigs: []func(*world) signed.Spec{keySpec}, want: []Reason{ReasonBadSignature}},
	}
	for _, format := range []Format{FormatClassic, FormatBundle} {
		for _, tt := range tests {
			t.Run(format.String()+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				repo := r.repo(t)
				digest := signed.PushImage(t, r.push, repo, "v1")
				for _, spec := range tt.sigs {
					sign(t, r, format, repo, digest, spec(w))
				}
				v, err := New(tt.policy(w), r.remote)
				if err != nil {
					t.Fatal(err)
				}
				res, err := v.Verify(t.Context(), repo, digest)
				var verr *Error
				if err != nil && !errors.As(err, &verr) {
					t.Fatalf("Verify: %v, want a verdict", err)
				}
				switch {
				case tt.want == nil:
					if err != nil {
						t.Fatalf("Verify: %v, want a pass", err)
					}
					if res.Format != format || res.Digest != digest || res.Repository != repo || res.Source == "" {
						t.Errorf("result %+v: want format %v, digest %s, repository %s and a source", res, format, digest, repo)
					}
				case tt.want[0] == unsigned:
					if !errors.Is(err, ErrUnsigned) || errors.Is(err, ErrInvalid) {
						t.Fatalf("Verify: %v, want unsigned", err)
					}
				default:
					if !errors.Is(err, ErrInvalid) || errors.Is(err, ErrUnsigned) {
						t.Fatalf("Verify: %v, want invalid", err)
					}
					var got []Reason
					for _, s := range verr.Signatures {
						got = append(got, s.Reason)
						if s.Format != format {
							t.Errorf("signature %q: format %v, want %v", s.Source, s.Format, format)
						}
					}
					// Bundles come in the order the registry lists its
					// referrers, and their digests change with each run's
					// keys: the reasons are compared as a set.
					want := slices.Clone(tt.want)
					slices.Sort(got)
					slices.Sort(want)
					if diff := cmp.Diff(got, want); diff != "" {
						t.Errorf("reasons, sorted (-got +want):\n%s\nerror: %v", diff, err)
					}
				}
				if tt.check != nil {
					tt.check(t, w, res, verr)
				}
			})
		}
	}
}
