package registry_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagebump/imagebump/registry"
)

func Example() {
	// A registry on loopback, speaking plain HTTP, with one image tagged
	// twice.
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, _ := random.Image(64, 1)
	for _, tag := range []string{"1.0.0", "1.1.0"} {
		ref, _ := name.NewTag(host+"/acme/app:"+tag, name.Insecure)
		if err := remote.Write(ref, img); err != nil {
			log.Fatal(err)
		}
	}

	c, err := registry.New(registry.Options{
		Hosts:    []registry.Host{{Host: host, Insecure: true, RequestsPerSecond: 10, Burst: 5}},
		Keychain: authn.NewMultiKeychain(), // anonymous: ignore ~/.docker here
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	tags, err := c.Tags(ctx, host+"/acme/app")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("tags:", tags)

	digest, err := c.Digest(ctx, host+"/acme/app", "1.1.0", "")
	if err != nil {
		log.Fatal(err)
	}
	want, _ := img.Digest()
	fmt.Println("digest matches:", digest == want.String())

	for _, r := range c.Scan(ctx, []string{host + "/acme/app", host + "/acme/gone"}, 2) {
		if r.Err != nil {
			fmt.Printf("%s: %v\n", strings.TrimPrefix(r.Repository, host+"/"), registry.KindOf(r.Err))
			continue
		}
		fmt.Printf("%s: %d tags\n", strings.TrimPrefix(r.Repository, host+"/"), len(r.Tags))
	}
	// Output:
	// tags: [1.0.0 1.1.0]
	// digest matches: true
	// acme/app: 2 tags
	// acme/gone: not found
}

// ExampleClient_Cycle shows a long-running process: one Client for its
// whole life, one Cycle per cycle. A host that stops answering fails the
// rest of its cycle at once; the next cycle tries it again.
func ExampleClient_Cycle() {
	// A port where nothing listens.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	down := l.Addr().String()
	l.Close()

	c, err := registry.New(registry.Options{
		Hosts:    []registry.Host{{Host: down, Insecure: true, Timeout: time.Second, MaxRetries: registry.NoRetries}},
		Keychain: authn.NewMultiKeychain(),
	})
	if err != nil {
		log.Fatal(err)
	}
	for cycle := 1; cycle <= 2; cycle++ {
		y := c.Cycle()
		for _, r := range y.Scan(context.Background(), []string{down + "/acme/a", down + "/acme/b"}, 1) {
			held := strings.Contains(r.Err.Error(), "stopped answering earlier in this cycle")
			fmt.Printf("cycle %d, %s: %v, held down: %v\n", cycle, strings.TrimPrefix(r.Repository, down+"/"), registry.KindOf(r.Err), held)
		}
	}
	// Output:
	// cycle 1, acme/a: network, held down: false
	// cycle 1, acme/b: network, held down: true
	// cycle 2, acme/a: network, held down: false
	// cycle 2, acme/b: network, held down: true
}
