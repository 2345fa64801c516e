package setters

import (
	"bytes"
	"context"
	"testing"
)

// FuzzDecodeIndex feeds the index file decoder bodies that pass the
// checksum (a damaged file that fails it never reaches the fields): it
// must never panic or allocate without bound, and what it accepts must
// encode back to the same bytes.
func FuzzDecodeIndex(f *testing.F) {
	// Seeds: real index files of each kind, from a golden-like tree.
	dir := f.TempDir()
	files := map[string]string{
		"a.yaml":          markedOutside,
		"b/c.yaml":        "image: ghcr.io/acme/app:1.0.0 # {\"$imagepolicy\": \"apps:app\"}\nbad: [\n",
		"b/plain.yaml":    "plain: x\n",
		"d.yml":           "list: [a] # {\"$imagepolicy\": \"apps:app\"}\n",
		"kustom.yaml":     "images:\n  - name: ghcr.io/acme/app # {\"$imagepolicy\": \"apps:app:name\"}\n    newTag: 1.0.0 # {\"$imagepolicy\": \"apps:app:tag\"}\n",
		"Kustomization":   "x: 1 # {\"$imagepolicy\": \"nope\"}\n",
		"flow/flow.yaml":  "{image: ghcr.io/acme/app:1.0.0} # {\"$imagepolicy\": \"apps:app\"}\n",
		"digest/d.yaml":   "digest: sha256:" + string(bytes.Repeat([]byte("a"), 64)) + " # {\"$imagepolicy\": \"apps:app:digest\"}\n",
		"many/m.yaml":     "a: x:1 # {\"$imagepolicy\": \"apps:a\"}\nb: y:2 # {\"$imagepolicy\": \"apps:b\"}\n",
		"unknown/u.yaml":  "u: z:1 # {\"$imagepolicy\": \"apps:unknown\"}\n",
		"large/big.yaml ": "# x\n",
	}
	writeFiles(f, dir, files)
	for _, kind := range []IndexKind{ByStat, ByBlob} {
		opts := Options{Root: dir, Images: map[string]Image{"apps:app": {Repository: "ghcr.io/acme/app", Tag: "1.0.0"}}}
		ix := NewIndex(kind, opts)
		opts.Index = ix
		if err := ix.Scan(context.Background(), opts); err != nil {
			f.Fatal(err)
		}
		if _, err := Apply(context.Background(), opts); err != nil {
			f.Fatal(err)
		}
		data := ix.encode()
		f.Add(data[:len(data)-32])
	}
	f.Add([]byte(indexMagic))
	f.Fuzz(func(t *testing.T, body []byte) {
		if !bytes.HasPrefix(body, []byte(indexMagic)) {
			body = append([]byte(indexMagic), body...)
		}
		ix, err := decodeIndex(reseal(string(body)))
		if err != nil {
			return
		}
		again := ix.encode()
		ix2, err := decodeIndex(again)
		if err != nil {
			t.Fatalf("an index that decoded does not decode once encoded again: %v", err)
		}
		if !bytes.Equal(ix2.encode(), again) {
			t.Fatal("encode(decode(encode(x))) differs from encode(x)")
		}
	})
}
