package flux

import (
	"context"
	"testing"
)

// BenchmarkLoadFleet reads the sample fleet: with the kustomize build of
// its apps folder, and without.
func BenchmarkLoadFleet(b *testing.B) {
	for _, tt := range []struct {
		name string
		opts LoadOptions
	}{{"kustomize", LoadOptions{}}, {"as-written", LoadOptions{NoKustomize: true}}} {
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Load(context.Background(), []string{fleet + "/clusters"}, tt.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
