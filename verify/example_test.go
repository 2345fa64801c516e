package verify_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagebump/imagebump/verify"
)

// Example gates a tag on its signature: an image pushed without one is
// held back as unsigned.
func Example() {
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repository := strings.TrimPrefix(srv.URL, "http://") + "/acme/app"

	// CI pushed an image, and forgot to sign it.
	img, _ := random.Image(64, 1)
	tag, _ := name.NewTag(repository + ":1.4.2")
	if err := remote.Write(tag, img); err != nil {
		log.Fatal(err)
	}
	digest, _ := img.Digest()

	// The policy trusts one cosign key.
	dir, _ := os.MkdirTemp("", "verify-example")
	defer os.RemoveAll(dir)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	keyFile := filepath.Join(dir, "cosign.pub")
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)

	v, err := verify.New(verify.Options{Key: keyFile}, verify.NewRemote())
	if err != nil {
		log.Fatal(err)
	}
	res, err := v.Verify(ctx, repository, digest.String())
	switch {
	case err == nil:
		fmt.Println("candidate: signed,", res.Format)
	case errors.Is(err, verify.ErrUnsigned):
		fmt.Println("held back: unsigned")
	case errors.Is(err, verify.ErrInvalid):
		fmt.Println("held back: no valid signature")
	default:
		fmt.Println("could not check:", err)
	}
	// Output: held back: unsigned
}
