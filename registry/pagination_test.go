package registry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// pager is a fake registry that serves one repository's tag list in pages
// with Link headers in various styles.
type pager struct {
	tags    []string // sorted
	style   string   // how the Link header is written
	maxPage int      // the server's cap on n; 0: none
	noLimit bool     // ignore n and last; send everything

	mu    sync.Mutex
	pages int
	sizes []int
}

func (p *pager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v2/" {
		return
	}
	if r.URL.Path != "/v2/acme/app/tags/list" {
		http.NotFound(w, r)
		return
	}
	p.mu.Lock()
	p.pages++
	page := p.pages
	p.mu.Unlock()
	q := r.URL.Query()
	n, err := strconv.Atoi(q.Get("n"))
	if err != nil || n <= 0 {
		n = 100
	}
	if p.maxPage > 0 {
		n = min(n, p.maxPage)
	}
	start := 0
	if last := q.Get("last"); last != "" {
		start, _ = slices.BinarySearch(p.tags, last)
		if start < len(p.tags) && p.tags[start] == last {
			start++
		}
	}
	end := min(start+n, len(p.tags))
	if p.noLimit {
		start, end = 0, len(p.tags)
	}
	if p.style == "stuck" {
		// The same first page forever, under ever new URLs.
		start, end = 0, min(n, len(p.tags))
	}
	p.mu.Lock()
	p.sizes = append(p.sizes, end-start)
	p.mu.Unlock()
	if end < len(p.tags) || p.style == "stuck" || p.style == "cycle" {
		path := fmt.Sprintf("/v2/acme/app/tags/list?last=%s&n=%d", p.tags[max(end-1, 0)], n)
		abs := "http://" + r.Host + path
		switch p.style {
		case "relative":
			w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, path))
		case "absolute":
			w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, abs))
		case "multi":
			w.Header().Set("Link", fmt.Sprintf(`</v2/acme/app/tags/list?n=%d>; rel="first", <%s>; rel="next"; title="more"`, n, path))
		case "unquoted":
			w.Header().Set("Link", fmt.Sprintf(`<%s>;rel=next`, path))
		case "relation list":
			w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="prefetch next"`, path))
		case "cycle":
			// Page 2 points back to page 1.
			if page == 1 {
				w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, path))
			} else if end < len(p.tags) {
				w.Header().Set("Link", fmt.Sprintf(`</v2/acme/app/tags/list?n=%d>; rel="next"`, n))
			}
		case "stuck":
			w.Header().Set("Link", fmt.Sprintf(`</v2/acme/app/tags/list?page=%d&n=%d>; rel="next"`, page+1, n))
		case "none":
		}
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"name":"acme/app","tags":[`)
	for i, t := range p.tags[start:end] {
		if i > 0 {
			fmt.Fprint(w, ",")
		}
		fmt.Fprintf(w, "%q", t)
	}
	fmt.Fprint(w, "]}")
}

func makeTags(n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("1.0.%05d", i)
	}
	return tags
}

func TestPagination(t *testing.T) {
	tests := []struct {
		name      string
		tags      int
		style     string
		maxPage   int
		noLimit   bool
		pageSize  int
		wantTags  int // how many of the first tags come back
		wantPages int
		wantWarn  string
	}{
		{name: "10000 tags relative links", tags: 10000, style: "relative", pageSize: 1000, wantTags: 10000, wantPages: 10},
		{name: "absolute links", tags: 2500, style: "absolute", pageSize: 1000, wantTags: 2500, wantPages: 3},
		{name: "several link values", tags: 2500, style: "multi", pageSize: 1000, wantTags: 2500, wantPages: 3},
		{name: "unquoted rel", tags: 250, style: "unquoted", pageSize: 100, wantTags: 250, wantPages: 3},
		{name: "relation list", tags: 250, style: "relation list", pageSize: 100, wantTags: 250, wantPages: 3},
		{name: "server caps the page size", tags: 2000, style: "relative", maxPage: 100, pageSize: 1000, wantTags: 2000, wantPages: 20},
		{name: "full pages without Link", tags: 2500, style: "none", pageSize: 1000, wantTags: 2500, wantPages: 3},
		{name: "exact multiple without Link", tags: 2000, style: "none", pageSize: 1000, wantTags: 2000, wantPages: 3},
		{name: "server ignores n", tags: 2500, style: "none", noLimit: true, pageSize: 1000, wantTags: 2500, wantPages: 1},
		{name: "server ignores n with exactly n tags", tags: 1000, style: "none", noLimit: true, pageSize: 1000, wantTags: 1000, wantPages: 2},
		{name: "link cycle", tags: 2500, style: "cycle", pageSize: 1000, wantTags: 2000, wantPages: 2, wantWarn: "repeats a page already fetched"},
		{name: "stuck on one page", tags: 2500, style: "stuck", pageSize: 1000, wantTags: 1000, wantPages: 2, wantWarn: "repeated tags already listed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pager{tags: makeTags(tt.tags), style: tt.style, maxPage: tt.maxPage, noLimit: tt.noLimit}
			srv := httptest.NewServer(p)
			t.Cleanup(srv.Close)
			host := strings.TrimPrefix(srv.URL, "http://")
			var logs logBuffer
			c := newClient(t, Options{PageSize: tt.pageSize, Logger: newLogger(&logs)}, host)
			got, err := c.Tags(context.Background(), host+"/acme/app")
			if err != nil {
				t.Fatalf("Tags: %v", err)
			}
			if diff := cmp.Diff(got, p.tags[:tt.wantTags]); diff != "" {
				t.Errorf("Tags mismatch (-got +want):\n%s", diff)
			}
			if p.pages != tt.wantPages {
				t.Errorf("fetched %d pages (sizes %v), want %d", p.pages, p.sizes, tt.wantPages)
			}
			warned := strings.Contains(logs.String(), "level=WARN")
			if tt.wantWarn == "" && warned {
				t.Errorf("unexpected warning:\n%s", logs.String())
			}
			if tt.wantWarn != "" && (!warned || !strings.Contains(logs.String(), tt.wantWarn)) {
				t.Errorf("log does not warn %q:\n%s", tt.wantWarn, logs.String())
			}
		})
	}
}

func TestParseLinks(t *testing.T) {
	tests := []struct {
		name    string
		header  string
		want    []link
		wantErr bool
	}{
		{name: "distribution style", header: `</v2/a/tags/list?last=x&n=2>; rel="next"`, want: []link{{target: "/v2/a/tags/list?last=x&n=2", next: true}}},
		{name: "unquoted", header: `<https://h/x>;rel=next`, want: []link{{target: "https://h/x", next: true}}},
		{name: "upper case rel", header: `<x>; REL="Next"`, want: []link{{target: "x", next: true}}},
		{name: "two links", header: `<a>; rel="prev", <b>; rel="next"`, want: []link{{target: "a"}, {target: "b", next: true}}},
		{name: "relation list", header: `<a>; rel="next last"`, want: []link{{target: "a", next: true}}},
		{name: "other params", header: `<a>; title="x, y; z"; rel="next"; type=text/html`, want: []link{{target: "a", next: true}}},
		{name: "escaped quote", header: `<a>; title="say \"hi\""; rel="next"`, want: []link{{target: "a", next: true}}},
		{name: "bare param", header: `<a>; crossorigin; rel=next`, want: []link{{target: "a", next: true}}},
		{name: "comma in target", header: `<a?x=1,2>; rel=next`, want: []link{{target: "a?x=1,2", next: true}}},
		{name: "no brackets", header: `/v2/a/tags/list; rel="next"`, wantErr: true},
		{name: "unterminated bracket", header: `</v2/a; rel="next"`, wantErr: true},
		{name: "empty target", header: `<>; rel="next"`, wantErr: true},
		{name: "unterminated quote", header: `<a>; rel="next`, wantErr: true},
		{name: "trailing comma", header: `<a>; rel="next",`, wantErr: true},
		{name: "junk after link", header: `<a>; rel="next" junk`, wantErr: true},
		{name: "empty param name", header: `<a>; =x`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLinks(tt.header)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseLinks(%q) error = %v, want error %v", tt.header, err, tt.wantErr)
			}
			if diff := cmp.Diff(got, tt.want, cmp.AllowUnexported(link{})); diff != "" {
				t.Errorf("parseLinks(%q) mismatch (-got +want):\n%s", tt.header, diff)
			}
		})
	}
}

func TestNextPage(t *testing.T) {
	page := mustParseURL(t, "https://reg.io/v2/a/tags/list?n=10")
	tests := []struct {
		name    string
		header  string
		want    string
		wantErr bool
	}{
		{name: "relative path", header: `</v2/a/tags/list?last=x&n=10>; rel="next"`, want: "https://reg.io/v2/a/tags/list?last=x&n=10"},
		{name: "relative query", header: `<?last=x&n=10>; rel="next"`, want: "https://reg.io/v2/a/tags/list?last=x&n=10"},
		{name: "absolute same host", header: `<https://REG.io/v2/a/tags/list?last=x>; rel="next"`, want: "https://reg.io/v2/a/tags/list?last=x"},
		{name: "no next", header: `</v2/a/tags/list?n=10>; rel="prev"`, want: ""},
		{name: "other host", header: `<https://evil.io/v2/a/tags/list>; rel="next"`, wantErr: true},
		{name: "other host, same port", header: `<https://reg.io.evil.io/v2/a/tags/list>; rel="next"`, wantErr: true},
		// A proxy's backend writing its own port or scheme: the path and
		// query are taken, on the page's origin.
		{name: "other port", header: `<https://reg.io:8443/v2/a/tags/list?last=x>; rel="next"`, want: "https://reg.io/v2/a/tags/list?last=x"},
		{name: "http on the same host", header: `<http://reg.io/v2/a/tags/list?last=x>; rel="next"`, want: "https://reg.io/v2/a/tags/list?last=x"},
		{name: "user info dropped", header: `<https://u:p@reg.io/v2/a/tags/list>; rel="next"`, want: "https://reg.io/v2/a/tags/list"},
		{name: "protocol relative other host", header: `<//evil.io/x>; rel="next"`, wantErr: true},
		{name: "malformed", header: `garbage`, wantErr: true},
		{name: "bad url", header: `<http://[::1>; rel="next"`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nextPage(page, tt.header)
			if (err != nil) != tt.wantErr {
				t.Fatalf("nextPage(%q) error = %v, want error %v", tt.header, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("nextPage(%q) = %q, want %q", tt.header, got, tt.want)
			}
		})
	}
}
