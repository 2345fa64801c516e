package verify

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/internal/testkit/signed"
)

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts Options
		want string // "" for valid
	}{
		{name: "key", opts: Options{Key: "cosign.pub"}},
		{name: "keyless exact", opts: Options{Keyless: &Keyless{Issuer: "i", Subject: "s"}}},
		{name: "keyless regexps and root", opts: Options{Keyless: &Keyless{IssuerRegexp: "i.*", SubjectRegexp: "s.*"}, TrustedRoot: "r.json", InsecureIgnoreTlog: true}},
		{name: "empty", opts: Options{}, want: "verify: set key (a cosign public key file) or keyless (issuer and subject)"},
		{name: "both", opts: Options{Key: "k", Keyless: &Keyless{Issuer: "i", Subject: "s"}}, want: "verify: key and keyless are exclusive; set one"},
		{name: "key with root", opts: Options{Key: "k", TrustedRoot: "r"}, want: "verify.trustedRoot: only used with keyless; remove it or use keyless"},
		{name: "key ignoring tlog", opts: Options{Key: "k", InsecureIgnoreTlog: true}, want: "verify.insecureIgnoreTlog: only used with keyless; key signatures never need a transparency log entry"},
		{name: "no issuer", opts: Options{Keyless: &Keyless{Subject: "s"}}, want: "verify.keyless: set issuer or issuerRegexp"},
		{name: "no subject", opts: Options{Keyless: &Keyless{Issuer: "i"}}, want: "verify.keyless: set subject or subjectRegexp"},
		{name: "two issuers", opts: Options{Keyless: &Keyless{Issuer: "i", IssuerRegexp: "i", Subject: "s"}}, want: "verify.keyless: issuer and issuerRegexp are exclusive; set one"},
		{name: "two subjects", opts: Options{Keyless: &Keyless{Issuer: "i", Subject: "s", SubjectRegexp: "s"}}, want: "verify.keyless: subject and subjectRegexp are exclusive; set one"},
		{name: "bad regexp", opts: Options{Keyless: &Keyless{Issuer: "i", SubjectRegexp: "a(b"}}, want: "verify.keyless.subjectRegexp: error parsing regexp: missing closing ): `^(?:a(b)$`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ""
			if err := tt.opts.Validate(); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("Validate (-got +want):\n%s", diff)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	k := signed.NewKey(t)
	good := k.WritePublic(t, dir, "cosign.pub")
	private := write("cosign.key", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIIl0\n-----END EC PRIVATE KEY-----\n")
	empty := write("empty.pub", "no PEM here\n")
	badRoot := write("root.json", `{"mediaType": "something else"}`)
	reg := NewRemote()
	tests := []struct {
		name    string
		opts    Options
		options []Option
		want    []string // substrings of the error
	}{
		{name: "missing key file", opts: Options{Key: filepath.Join(dir, "nope.pub")}, want: []string{"verify.key: reading public key", "nope.pub"}},
		{name: "private key", opts: Options{Key: private}, want: []string{"cosign.key", "not a public key", "never the private key"}},
		{name: "no PEM", opts: Options{Key: empty}, want: []string{"empty.pub holds no PEM public key"}},
		{name: "bad trusted root", opts: Options{Keyless: &Keyless{Issuer: "i", Subject: "s"}, TrustedRoot: badRoot}, want: []string{"verify.trustedRoot: parsing trusted root", "root.json"}},
		{name: "missing trusted root", opts: Options{Keyless: &Keyless{Issuer: "i", Subject: "s"}, TrustedRoot: filepath.Join(dir, "nope.json")}, want: []string{"verify.trustedRoot: reading trusted root"}},
		{
			name: "two roots", opts: Options{Keyless: &Keyless{Issuer: "i", Subject: "s"}, TrustedRoot: badRoot},
			options: []Option{WithTrustedRoot(StaticRoot{})}, want: []string{"WithTrustedRoot conflicts with Options.TrustedRoot"},
		},
		{name: "invalid options", opts: Options{}, want: []string{"verify: set key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.opts, reg, tt.options...)
			if err == nil {
				t.Fatal("New succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := New(Options{Key: good}, nil); err == nil {
		t.Error("New without a registry succeeded")
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	const d = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	tests := []struct {
		name string
		err  error
		want string
	}{
		{
			name: "unsigned",
			err:  &Error{Repository: "ghcr.io/acme/app", Digest: d},
			want: "ghcr.io/acme/app@" + d + ": unsigned: no cosign signature found (tag sha256-2222222222222222222222222222222222222222222222222222222222222222.sig, Sigstore bundle referrers); sign the image in CI (see docs/verify.md)",
		},
		{
			name: "invalid",
			err: &Error{Repository: "ghcr.io/acme/app", Digest: d, Signatures: []*SignatureError{
				{Format: FormatClassic, Source: "tag x.sig layer 0", Reason: ReasonDigestMismatch, SignedDigest: otherDigest},
				{Format: FormatBundle, Source: "referrer sha256:33", Reason: ReasonIdentity, Issuer: "https://accounts.example.org", Subject: "eve@example.org", Want: `issuer "https://oidc.example.com", subject matching "ci@.*"`},
				{Format: FormatBundle, Source: "referrer sha256:44", Reason: ReasonExpired, SignedAt: at, NotBefore: at.Add(-time.Hour), NotAfter: at.Add(-50 * time.Minute)},
				{Format: FormatBundle, Source: "referrer sha256:55", Reason: ReasonBadSignature, Err: errors.New("does not verify with the key in cosign.pub")},
			}},
			want: "ghcr.io/acme/app@" + d + ": no valid signature (4 found): " +
				"tag x.sig layer 0: signature for another digest: it signs " + otherDigest + "; " +
				`referrer sha256:33: wrong identity: issuer "https://accounts.example.org", subject "eve@example.org" (want issuer "https://oidc.example.com", subject matching "ci@.*"); ` +
				"referrer sha256:44: expired certificate: signed at 2026-11-25T10:00:00Z, certificate valid 2026-11-25T09:00:00Z to 2026-11-25T09:10:00Z; " +
				"referrer sha256:55: bad signature: does not verify with the key in cosign.pub",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.err.Error(), tt.want); diff != "" {
				t.Errorf("Error() (-got +want):\n%s", diff)
			}
		})
	}
	var se *SignatureError
	invalid := tests[1].err
	if !errors.As(invalid, &se) || se.Reason != ReasonDigestMismatch {
		t.Errorf("errors.As found %v, want the first signature's error", se)
	}
	if !errors.Is(invalid, ErrInvalid) || errors.Is(invalid, ErrUnsigned) {
		t.Error("an Error with signatures is not ErrInvalid only")
	}
}

func TestVerifyCancelled(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := startRegistry(t, true)
	repo := r.repo(t)
	digest := signed.PushImage(t, r.push, repo, "v1")
	signed.SignClassic(t, r.push, repo, digest, signed.Spec{Key: w.key})
	v, err := New(Options{Key: w.keyFile}, r.remote)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = v.Verify(ctx, repo, digest)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnsigned) || errors.Is(err, ErrInvalid) {
		t.Fatalf("Verify with a cancelled context: %v, want context.Canceled and no verdict", err)
	}
	if _, err := v.Verify(t.Context(), repo, digest); err != nil {
		t.Errorf("Verify after a cancelled one: %v (a cancellation must not be cached)", err)
	}
}

func TestVerifyRefusesNonDigests(t *testing.T) {
	t.Parallel()
	v, err := New(Options{Key: signed.NewKey(t).WritePublic(t, t.TempDir(), "k.pub")}, &failing{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"", "latest", "sha256:abc", "sha512:" + strings.Repeat("a", 128), "SHA256:" + strings.Repeat("a", 64)} {
		if _, err := v.Verify(t.Context(), "registry.example/app", d); err == nil || errors.Is(err, errDown) {
			t.Errorf("Verify(%q): %v, want a refusal before any request", d, err)
		}
	}
}
