package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTagsLimitEdges: a host's maxTags caps both the tags a listing may
// hold and their bytes (maxTags times 128, the longest valid tag). A
// listing at the caps is whole; one past either fails with KindLimit.
// The bugs it guards against: a registry answering with a few huge
// "tags" (the byte cap gone) filling memory before the tag count is ever
// reached, and a repository holding exactly maxTags tags, each as long as
// a tag may be, refused as too large.
func TestTagsLimitEdges(t *testing.T) {
	const maxTags = 10
	tagsOf := func(n, length int) []string {
		out := make([]string, n)
		for i := range out {
			p := fmt.Sprintf("%03d", i)
			out[i] = p + strings.Repeat("x", length-len(p))
		}
		return out
	}
	// The registry stores the valid tags; served, below, lists tags no
	// registry would store (longer than 128 bytes).
	served := map[string][]string{
		"/v2/huge/tags/list": tagsOf(2, 1000),
	}
	host := newRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tags, ok := served[r.URL.Path]
			if !ok {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"name": strings.Split(r.URL.Path, "/")[2], "tags": tags})
		})
	})
	for _, tt := range []struct {
		repo string
		tags []string // pushed to the registry; nil: served above
		fail bool
	}{
		{repo: "short", tags: tagsOf(maxTags, 4)},
		{repo: "longest", tags: tagsOf(maxTags, maxTagLen)},
		{repo: "onemore", tags: tagsOf(maxTags+1, 4), fail: true},
		{repo: "huge", fail: true},
	} {
		t.Run(tt.repo, func(t *testing.T) {
			if tt.tags != nil {
				push(t, host, tt.repo, tt.tags...)
			}
			c := newClient(t, Options{Hosts: []Host{{Host: host, Insecure: true, MaxTags: maxTags}}})
			got, err := c.Tags(context.Background(), host+"/"+tt.repo)
			if !tt.fail {
				if err != nil {
					t.Fatalf("Tags: %v; want the %d tags", err, len(tt.tags))
				}
				slices.Sort(got)
				if diff := cmp.Diff(got, tt.tags); diff != "" {
					t.Errorf("tags (-got +want):\n%s", diff)
				}
				return
			}
			if got != nil {
				t.Errorf("a failed listing returned %d tags", len(got))
			}
			e := asError(t, err)
			if e.Kind != KindLimit || !strings.Contains(err.Error(), "raise registries[].maxTags for "+host) {
				t.Errorf("Tags error = %v (kind %v); want KindLimit naming maxTags", err, e.Kind)
			}
		})
	}
}
