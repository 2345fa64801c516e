package gitwriter

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/imagebump/imagebump/internal/secretfile"
)

// loadSigningKey reads an armored OpenPGP private key and decrypts it with
// the passphrase file when it is encrypted. noteSecret is told the
// passphrase. Errors name the files and never their content.
func loadSigningKey(s Signer, noteSecret func(string)) (*openpgp.Entity, error) {
	if s.KeyFile == "" {
		return nil, errors.New("signing: no key file given")
	}
	armored, err := secretfile.ReadBytes(s.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("reading signing key file: %w", err)
	}
	entities, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil {
		return nil, fmt.Errorf("parsing signing key file %s as an armored OpenPGP key: %w", secretfile.Shown(s.KeyFile), err)
	}
	var key *openpgp.Entity
	for _, e := range entities {
		if e.PrivateKey != nil {
			key = e
			break
		}
	}
	if key == nil {
		return nil, fmt.Errorf("signing key file %s holds no private key", s.KeyFile)
	}
	if encrypted(key) {
		if s.PassphraseFile == "" {
			return nil, fmt.Errorf("signing key in %s is encrypted and no passphrase file is set", s.KeyFile)
		}
		pass, err := readSecret("signing key passphrase file", s.PassphraseFile)
		if err != nil {
			return nil, err
		}
		noteSecret(pass)
		if err := key.DecryptPrivateKeys([]byte(pass)); err != nil {
			return nil, fmt.Errorf("decrypting signing key in %s with the passphrase file (wrong passphrase?): %w", s.KeyFile, err)
		}
	}
	if _, ok := key.SigningKey(time.Now()); !ok {
		return nil, fmt.Errorf("signing key in %s has no valid key that may sign (expired or revoked?)", s.KeyFile)
	}
	return key, nil
}

// encrypted reports whether any private key of e needs a passphrase.
func encrypted(e *openpgp.Entity) bool {
	if e.PrivateKey.Encrypted {
		return true
	}
	for _, sub := range e.Subkeys {
		if sub.PrivateKey != nil && sub.PrivateKey.Encrypted {
			return true
		}
	}
	return false
}
