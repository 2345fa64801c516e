package verify

import (
	"errors"
	"fmt"
	"regexp"
)

// Options is the `verify:` block of an image policy: who must have signed a
// digest for its tag to be a candidate. Exactly one of Key and Keyless is
// set. The YAML keys are the field tags:
//
//	verify:
//	  key: keys/cosign.pub          # a PEM public key file; several PEM keys in it: any may sign
//
//	verify:
//	  keyless:
//	    issuer: https://token.actions.githubusercontent.com
//	    subjectRegexp: '^https://github\.com/acme/app/\.github/workflows/release\.yml@refs/tags/v.*$'
//	  trustedRoot: sigstore/trusted_root.json   # optional: default is Sigstore's public-good root
//
// File paths are as the config gives them; the config loader resolves them
// against the config file's folder before New reads them.
type Options struct {
	// Key is a file holding one or more PEM public keys (cosign.pub, as
	// `cosign generate-key-pair` writes it; ECDSA, RSA or Ed25519). A digest
	// passes if any key verifies one of its signatures.
	Key string `yaml:"key,omitempty" json:"key,omitempty"`
	// Keyless asks for a Fulcio certificate whose OIDC issuer and subject
	// (the certificate's SAN: a workflow URL, an email) match.
	Keyless *Keyless `yaml:"keyless,omitempty" json:"keyless,omitempty"`
	// TrustedRoot is a Sigstore trusted_root.json for keyless verification:
	// the Fulcio CAs, Rekor logs, CT logs and timestamp authorities to trust.
	// Default: Sigstore's public-good instance, fetched and refreshed through
	// TUF (see PublicGood). Only with Keyless.
	TrustedRoot string `yaml:"trustedRoot,omitempty" json:"trustedRoot,omitempty"`
	// InsecureIgnoreTlog accepts keyless signatures without a transparency
	// log entry, provided an RFC 3161 timestamp from a timestamp authority in
	// the trusted root proves when they were made (as cosign's
	// --insecure-ignore-tlog). For private Sigstore deployments without Rekor.
	// Only with Keyless. Default: false, a Rekor entry is required.
	InsecureIgnoreTlog bool `yaml:"insecureIgnoreTlog,omitempty" json:"insecureIgnoreTlog,omitempty"`
}

// Keyless is the identity a keyless signature's certificate must carry. Of
// Issuer and IssuerRegexp exactly one is set, and so of Subject and
// SubjectRegexp. Regular expressions are RE2 and must match the whole value:
// unlike cosign's --certificate-identity-regexp they are anchored, so that
// "https://github.com/acme/.*" cannot be met by a subject that merely
// contains it.
type Keyless struct {
	// Issuer is the OIDC issuer, such as
	// "https://token.actions.githubusercontent.com" for GitHub Actions or
	// "https://accounts.google.com".
	Issuer       string `yaml:"issuer,omitempty" json:"issuer,omitempty"`
	IssuerRegexp string `yaml:"issuerRegexp,omitempty" json:"issuerRegexp,omitempty"`
	// Subject is the certificate's subject alternative name: for GitHub
	// Actions the workflow ref URL
	// ("https://github.com/acme/app/.github/workflows/release.yml@refs/heads/main"),
	// for a person their email.
	Subject       string `yaml:"subject,omitempty" json:"subject,omitempty"`
	SubjectRegexp string `yaml:"subjectRegexp,omitempty" json:"subjectRegexp,omitempty"`
}

// Validate checks the options without reading any file, so that `imagebump
// validate` can report a bad `verify:` block. Its errors name the key at
// fault, relative to the `verify:` block.
func (o Options) Validate() error {
	switch {
	case o.Key == "" && o.Keyless == nil:
		return errors.New("verify: set key (a cosign public key file) or keyless (issuer and subject)")
	case o.Key != "" && o.Keyless != nil:
		return errors.New("verify: key and keyless are exclusive; set one")
	case o.Key != "" && o.TrustedRoot != "":
		return errors.New("verify.trustedRoot: only used with keyless; remove it or use keyless")
	case o.Key != "" && o.InsecureIgnoreTlog:
		return errors.New("verify.insecureIgnoreTlog: only used with keyless; key signatures never need a transparency log entry")
	}
	if o.Keyless != nil {
		return o.Keyless.validate()
	}
	return nil
}

func (k *Keyless) validate() error {
	if err := exactlyOne("issuer", k.Issuer, k.IssuerRegexp); err != nil {
		return err
	}
	if err := exactlyOne("subject", k.Subject, k.SubjectRegexp); err != nil {
		return err
	}
	for _, re := range []struct{ key, expr string }{{"issuerRegexp", k.IssuerRegexp}, {"subjectRegexp", k.SubjectRegexp}} {
		if re.expr == "" {
			continue
		}
		if _, err := regexp.Compile(anchor(re.expr)); err != nil {
			return fmt.Errorf("verify.keyless.%s: %w", re.key, err)
		}
	}
	return nil
}

func exactlyOne(key, exact, expr string) error {
	switch {
	case exact == "" && expr == "":
		return fmt.Errorf("verify.keyless: set %s or %sRegexp", key, key)
	case exact != "" && expr != "":
		return fmt.Errorf("verify.keyless: %s and %sRegexp are exclusive; set one", key, key)
	}
	return nil
}

// anchor makes expr match whole values only.
func anchor(expr string) string {
	if expr == "" {
		return ""
	}
	return `^(?:` + expr + `)$`
}

// want describes the identity o asks for, for error messages.
func (k *Keyless) want() string {
	var issuer, subject string
	if k.Issuer != "" {
		issuer = fmt.Sprintf("issuer %q", k.Issuer)
	} else {
		issuer = fmt.Sprintf("issuer matching %q", k.IssuerRegexp)
	}
	if k.Subject != "" {
		subject = fmt.Sprintf("subject %q", k.Subject)
	} else {
		subject = fmt.Sprintf("subject matching %q", k.SubjectRegexp)
	}
	return issuer + ", " + subject
}
