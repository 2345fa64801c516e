package registry

// What a Client keeps between cycles: the tag list pages it decoded and
// the repository names it parsed.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

// bodies is a fake registry serving one repository's tag list: page 1 at
// /v2/acme/app/tags/list and, when set, page 2 (announced by a Link
// header), each with the body a test sets before a listing.
type bodies struct {
	mu    sync.Mutex
	first string
	next  string // "": one page
}

func (b *bodies) set(first, next string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.first, b.next = first, next
}

func (b *bodies) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	first, next := b.first, b.next
	b.mu.Unlock()
	switch {
	case r.URL.Path == "/v2/":
	case r.URL.Path == "/v2/acme/app/tags/list" && r.URL.Query().Get("page") == "2":
		fmt.Fprint(w, next)
	case r.URL.Path == "/v2/acme/app/tags/list":
		if next != "" {
			w.Header().Set("Link", `</v2/acme/app/tags/list?page=2>; rel="next"`)
		}
		fmt.Fprint(w, first)
	default:
		http.NotFound(w, r)
	}
}

// TestTagsCachedPages: listings through one Client, each after the
// registry's answer changed or not. A page served again byte for byte
// gives its tags without decoding them again (the same strings as the
// last listing's), anything else is decoded, and every listing gives
// what the registry lists now, duplicates dropped, in its order. (Tags of
// one byte are left out: Go makes every such string from one table.)
func TestTagsCachedPages(t *testing.T) {
	b := &bodies{}
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	c := newClient(t, Options{}, host)
	repo := host + "/acme/app"

	page := func(tags ...string) string {
		quoted := make([]string, len(tags))
		for i, t := range tags {
			quoted[i] = fmt.Sprintf("%q", t)
		}
		return `{"name":"acme/app","tags":[` + strings.Join(quoted, ",") + `]}`
	}
	steps := []struct {
		name        string
		first, next string
		want        []string
		reused      bool // the tags are the last listing's strings
	}{
		{name: "first listing", first: page("1.0.0", "1.1.0"), want: []string{"1.0.0", "1.1.0"}},
		{name: "the same bytes", first: page("1.0.0", "1.1.0"), want: []string{"1.0.0", "1.1.0"}, reused: true},
		{name: "a tag pushed", first: page("1.0.0", "1.1.0", "1.2.0"), want: []string{"1.0.0", "1.1.0", "1.2.0"}},
		{name: "the same tags, other bytes", first: `{"tags":["1.0.0","1.1.0","1.2.0"],"name":"acme/app"}`, want: []string{"1.0.0", "1.1.0", "1.2.0"}},
		{name: "a tag listed twice", first: page("alpha", "beta", "alpha"), want: []string{"alpha", "beta"}},
		{name: "a tag listed twice, again", first: page("alpha", "beta", "alpha"), want: []string{"alpha", "beta"}, reused: true},
		{name: "no tags", first: `{"name":"acme/app","tags":null}`, want: []string{}},
		{name: "no tags, again", first: `{"name":"acme/app","tags":null}`, want: []string{}},
		{name: "two pages", first: page("alpha", "beta"), next: page("beta", "gamma"), want: []string{"alpha", "beta", "gamma"}},
		{name: "two pages, again", first: page("alpha", "beta"), next: page("beta", "gamma"), want: []string{"alpha", "beta", "gamma"}, reused: true},
		{name: "the second page changed", first: page("alpha", "beta"), next: page("gamma", "delta"), want: []string{"alpha", "beta", "gamma", "delta"}},
		{name: "back to one page", first: page("alpha", "beta"), want: []string{"alpha", "beta"}, reused: true},
	}
	var last *byte // the first tag's bytes in the last listing
	for _, st := range steps {
		b.set(st.first, st.next)
		got, err := c.Tags(context.Background(), repo)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Errorf("%s: tags (-want +got):\n%s", st.name, diff)
		}
		if got == nil {
			t.Errorf("%s: nil tags, want an empty list", st.name)
		}
		if len(got) == 0 {
			last = nil
			continue
		}
		if st.reused && unsafe.StringData(got[0]) != last {
			t.Errorf("%s: the page was decoded again", st.name)
		}
		last = unsafe.StringData(got[0])
		// The caller owns the list: changing it changes no later one.
		for i := range got {
			got[i] = "changed"
		}
	}
}

// TestPageCacheBounded: the cache holds at most two generations of
// maxPageCache bytes, and counts what the newer one holds; a page asked
// for again moves to the newer one, and a page no one asks for is gone
// after two turns.
func TestPageCacheBounded(t *testing.T) {
	var c pageCache
	body := []byte(strings.Repeat("x", maxCachedPage/2))
	tags := []string{"1.0.0"}
	held := func(gen map[string]*tagPage) int {
		n := 0
		for _, p := range gen {
			n += p.size
		}
		return n
	}
	c.put("kept", body, tags, false)
	c.put("dropped", body, tags, false)
	for i := range 4 * maxPageCache / len(body) {
		// A page put again replaces the last one.
		c.put(fmt.Sprintf("filler-%d", i), body, tags, false)
		c.put(fmt.Sprintf("filler-%d", i), body, tags, false)
		if c.get("kept", body) == nil {
			t.Fatalf("after %d other pages, a page asked for at each turn is gone", i+1)
		}
		if got := held(c.cur); got != c.size {
			t.Fatalf("after %d pages the newer generation holds %d bytes, and the cache counts %d", i+1, got, c.size)
		}
		if total := held(c.cur) + held(c.old); total > 2*maxPageCache || c.size > maxPageCache {
			t.Fatalf("after %d pages the cache holds %d bytes (%d in the newer generation), over 2 x %d", i+1, total, c.size, maxPageCache)
		}
		if _, ok := c.old["kept"]; ok {
			t.Fatalf("after %d pages, a page moved to the newer generation is still in the older", i+1)
		}
	}
	if c.get("dropped", body) != nil {
		t.Error("a page never asked for again is still held")
	}
	if c.get("kept", []byte("other bytes")) != nil {
		t.Error("a page was given for other bytes")
	}
	large := []byte(strings.Repeat("x", maxCachedPage+1))
	if p := c.put("large", large, tags, false); p == nil || len(p.tags) != 1 {
		t.Errorf("put of a large page gave %+v, want the page", p)
	}
	if c.get("large", large) != nil {
		t.Error("a page larger than maxCachedPage is held")
	}
}

// TestRepositoryKept: a repository name is parsed once for its host, with
// the host's scheme, and kept; a name that does not parse is refused each
// time and not kept; past maxParsedRepos names the Client starts afresh.
func TestRepositoryKept(t *testing.T) {
	c := newClient(t, Options{}, "127.0.0.1:5000")
	tests := []struct {
		name, scheme string
		wantErr      string
	}{
		{name: "127.0.0.1:5000/acme/app", scheme: "http"},
		{name: "ghcr.io/acme/app", scheme: "https"},
		{name: "acme/app", scheme: "https"},
		{name: "ghcr.io/Acme/App", wantErr: "repository can only contain"},
		{name: "ghcr.io/acme/app:1.0", wantErr: "must not have a tag"},
	}
	for _, tt := range tests {
		for range 2 {
			repo, h, err := c.repository(tt.name)
			_, kept := c.parsed.get(tt.name)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("%s: error %v, want one saying %q", tt.name, err, tt.wantErr)
				}
				if kept {
					t.Errorf("%s: a name that does not parse is kept", tt.name)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if got := repo.Scheme(); got != tt.scheme {
				t.Errorf("%s: scheme %s, want %s", tt.name, got, tt.scheme)
			}
			if h == nil || h != c.hostFor(repo.RegistryStr()) {
				t.Errorf("%s: host %v, want the Client's for %s", tt.name, h, repo.RegistryStr())
			}
			if !kept {
				t.Errorf("%s: not kept", tt.name)
			}
		}
	}
	for i := range maxParsedRepos {
		if _, _, err := c.repository(fmt.Sprintf("ghcr.io/acme/app-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.parsed.len(); n > maxParsedRepos {
		t.Errorf("the Client keeps %d names, over %d", n, maxParsedRepos)
	}
}
