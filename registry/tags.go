package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/imagebump/imagebump/internal/printable"
	"github.com/imagebump/imagebump/internal/redact"
)

// maxTagsPage bounds one page of a tag list; 10,000 tags of 128 characters
// take about 1.3 MB.
const maxTagsPage = 32 << 20

// Tags returns every tag of repository, such as "ghcr.io/acme/app" (a
// name without a registry is on Docker Hub), in the order the registry
// lists them, without duplicates. It runs in a Cycle of its own; see
// Cycle.Tags.
func (c *Client) Tags(ctx context.Context, repository string) ([]string, error) {
	return c.Cycle().Tags(ctx, repository)
}

// Tags returns every tag of repository, such as "ghcr.io/acme/app" (a
// name without a registry is on Docker Hub), in the order the registry
// lists them, without duplicates. The tags are what the registry sent,
// unchecked: package policy sets aside those that are not valid tags.
//
// It asks for Options.PageSize tags per page and follows the pages the
// registry announces in Link headers (RFC 8288, relative or absolute). A
// Link to another port or scheme of the same host name (a registry behind a
// TLS proxy that writes its own address) is followed on the registry's own
// scheme and port. A Link header that cannot be parsed, or that points to
// another host, fails the listing (KindBadResponse): the tags gathered so
// far would be a partial list, and a policy picking from it could move a
// marker back. A Link that repeats a page already fetched, or whose page
// holds only tags already listed, ends the listing with a logged warning
// and the tags gathered so far. A registry that fills a page without ever
// sending a Link header is asked for the next page with "last", as the
// distribution spec allows.
//
// A registry that keeps announcing new pages meets the host's caps: past
// MaxPages pages, MaxTags tags (or MaxTags*128 bytes of tags) or its
// RepositoryTimeout, the listing fails with KindLimit. A page that fails
// after its retries fails the whole listing: a partial list never comes
// with an error. Errors are *Error with Op OpListTags.
//
// A page whose bytes are those the Client last decoded from the same URL
// gives the tags decoded then (see pageCache).
func (y *Cycle) Tags(ctx context.Context, repository string) ([]string, error) {
	c := y.c
	k, ctx, cancel, err := y.start(ctx, OpListTags, repository, "", "")
	if err != nil {
		return nil, err
	}
	defer cancel()
	s, err := k.session(ctx)
	if err != nil {
		return nil, err
	}
	tags := []string{}
	var seen map[string]bool // made when a page after the first comes
	fetched := map[string]bool{}
	next := fmt.Sprintf("%s/tags/list?n=%d", s.base, c.pageSize)
	viaLink := false // whether next came from a Link header
	sawLink := false // whether the registry paginates with Link headers
	size := 0        // bytes of tags listed
	for page := 1; ; page++ {
		if page > k.h.maxPages {
			return nil, k.fail(ctx, 0, &limitError{
				setting: "maxPages",
				msg:     fmt.Sprintf("still listing after %d pages (%d tags) and the registry announces more", k.h.maxPages, len(tags)),
			})
		}
		fetched[next] = true
		var (
			list    *tagPage
			link    string
			pageURL *url.URL
		)
		err := k.do(ctx, "tags page", func(ctx context.Context, s *session) error {
			resp, body, err := s.fetch(ctx, http.MethodGet, next, []string{"application/json"}, maxTagsPage)
			if err != nil {
				return err
			}
			if list = c.pages.get(next, body); list == nil {
				var decoded tagList
				if err := json.Unmarshal(body, &decoded); err != nil {
					return &badResponseError{what: "decoding tag list", err: err}
				}
				list = c.pages.put(next, body, decoded.Tags, page == 1)
			}
			link = resp.Header.Get("Link")
			pageURL = resp.Request.URL
			return nil
		})
		if err != nil {
			return nil, err
		}
		added := 0
		switch {
		case page == 1 && list.unique:
			tags = append(make([]string, 0, len(list.tags)), list.tags...)
			for _, t := range tags {
				size += len(t)
			}
			added = len(tags)
		default:
			if seen == nil {
				seen = make(map[string]bool, len(tags)+len(list.tags))
				for _, t := range tags {
					seen[t] = true
				}
			}
			for _, t := range list.tags {
				if !seen[t] {
					seen[t] = true
					tags = append(tags, t)
					size += len(t)
					added++
				}
			}
		}
		if len(tags) > k.h.maxTags || size > k.h.maxTags*maxTagLen {
			return nil, k.fail(ctx, 0, &limitError{
				setting: "maxTags",
				msg:     fmt.Sprintf("the registry listed more than %d tags (or %d bytes of tags) after %d pages", k.h.maxTags, k.h.maxTags*maxTagLen, page),
			})
		}
		if page > 1 && added == 0 {
			// A registry ignoring "last" repeats the full page it sent;
			// only a Link that leads back to old tags is worth a warning.
			if viaLink && len(list.tags) > 0 {
				c.log.Warn("registry repeated tags already listed; stopping pagination", "repository", repository, "page", page, "tags", len(tags))
			}
			return tags, nil
		}
		if link != "" {
			u, err := nextPage(pageURL, link)
			switch {
			case err != nil:
				return nil, k.fail(ctx, 0, &badResponseError{what: fmt.Sprintf("following the tag list's Link header after %d tags", len(tags)), err: err})
			case u == "":
				return tags, nil
			case fetched[u]:
				c.log.Warn("Link header repeats a page already fetched; stopping pagination", "repository", repository, "link", c.secrets.Text(redact.String(u)), "tags", len(tags))
				return tags, nil
			}
			next, viaLink, sawLink = u, true, true
			continue
		}
		if sawLink || len(list.tags) != c.pageSize {
			// A registry that sends Link headers sends none on the last
			// page. Otherwise a short page is the last one, and a longer
			// one means the registry ignores n and sent everything.
			return tags, nil
		}
		// A full page and no Link: ask for the tags after the last one.
		u := withLast(pageURL, list.tags[len(list.tags)-1], c.pageSize)
		if fetched[u] {
			return tags, nil
		}
		c.log.Debug("full page without Link header; asking for the next with last", "repository", repository, "page", page)
		next, viaLink = u, false
	}
}

// tagList is the body of GET /v2/<name>/tags/list.
type tagList struct {
	Name string   `json:"name"`
	Tags []string `json:"tags"`
}

// tagPage is one page of a tag list as decoded from body. It is shared
// through the Client's pageCache and never changed.
type tagPage struct {
	body   []byte // nil when the page is not kept
	tags   []string
	unique bool // the page starts a listing and lists no tag twice
	size   int  // bytes held: the body's and the tags'
}

// unique reports whether tags lists no tag twice.
func unique(tags []string) bool {
	seen := make(map[string]bool, len(tags))
	for _, t := range tags {
		if seen[t] {
			return false
		}
		seen[t] = true
	}
	return true
}

// The pages a Client decoded.
//
// A registry mostly lists the same tags cycle after cycle, and decoding a
// tag list's JSON was a tenth of the CPU of a serve cycle with nothing new
// over 200 repositories. A page is still fetched every time; when its
// bytes are those of the page last decoded from the same URL, the tags
// decoded then are taken instead of decoding them again. The answer is
// the same by construction: the same bytes decode to the same tags.

// maxPageCache bounds the bytes the cache holds in each of its two
// generations; maxCachedPage, one page (larger pages are decoded every
// time).
const (
	maxPageCache  = 16 << 20
	maxCachedPage = 1 << 20
)

// pageCache holds decoded tag list pages by URL, in two generations: a
// page found in the older one moves to the newer, and when the newer
// holds maxPageCache bytes it becomes the older and the older is
// dropped. Pages no cycle asks for again are gone within two such turns.
type pageCache struct {
	mu       sync.Mutex
	cur, old map[string]*tagPage
	size     int // bytes in cur
}

// get returns the page decoded from url when its body was body, else nil.
// The bodies are compared outside the lock, which every listing takes: a
// page never changes once cached.
func (c *pageCache) get(url string, body []byte) *tagPage {
	c.mu.Lock()
	p, ok := c.cur[url]
	if !ok {
		if p, ok = c.old[url]; ok {
			delete(c.old, url)
			c.add(url, p)
		}
	}
	c.mu.Unlock()
	if !ok || !bytes.Equal(p.body, body) {
		return nil
	}
	return p
}

// put records tags, decoded from body, as the page last decoded from url,
// unless body is larger than maxCachedPage, and returns the page. first
// says whether the page starts a listing: only there is it worth knowing
// whether it lists a tag twice.
func (c *pageCache) put(url string, body []byte, tags []string, first bool) *tagPage {
	p := &tagPage{tags: tags, unique: first && unique(tags)}
	if len(body) > maxCachedPage {
		return p
	}
	// A copy: the buffer read may be far larger than the body.
	p.body = bytes.Clone(body)
	p.size = len(body)
	for _, t := range tags {
		p.size += len(t) + 16
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if q, ok := c.cur[url]; ok {
		c.size -= q.size
	}
	c.add(url, p)
	return p
}

func (c *pageCache) add(url string, p *tagPage) {
	if c.cur == nil || c.size+p.size > maxPageCache {
		c.old, c.cur, c.size = c.cur, map[string]*tagPage{}, 0
	}
	c.cur[url] = p
	c.size += p.size
}

// withLast returns the tags list URL asking for n tags after last.
func withLast(page *url.URL, last string, n int) string {
	u := *page
	q := u.Query()
	q.Set("n", strconv.Itoa(n))
	q.Set("last", last)
	u.RawQuery = q.Encode()
	return u.String()
}

// nextPage returns the absolute URL of the rel="next" link in a Link header
// value, resolved against the page that sent it, or "" if there is none.
// Only its path and query are taken: a link to another scheme or port of
// the page's host name is followed on the page's own scheme and port (a
// registry behind a proxy often writes http:// or its own port), which
// never leaves the origin already trusted. A link to another host name,
// or a header that does not parse, is a *linkError.
func nextPage(page *url.URL, header string) (string, error) {
	links, err := parseLinks(header)
	if err != nil {
		return "", &linkError{header: header}
	}
	for _, l := range links {
		if !l.next {
			continue
		}
		ref, err := url.Parse(l.target)
		if err != nil {
			return "", &linkError{header: header}
		}
		u := page.ResolveReference(ref)
		if !strings.EqualFold(u.Hostname(), page.Hostname()) {
			return "", &linkError{host: u.Host, page: page.Host}
		}
		u.Scheme, u.Host, u.User, u.Fragment = page.Scheme, page.Host, nil, ""
		return u.String(), nil
	}
	return "", nil
}

// linkError is a Link header of a tag list that cannot be followed: one
// that does not parse (header), or one whose next page is on another host
// than the page (host, page).
type linkError struct {
	header     string
	host, page string
}

func (e *linkError) Error() string {
	if e.host != "" {
		return fmt.Sprintf("the next page is announced on another host, %s, which imagebump does not follow from %s", e.host, e.page)
	}
	return fmt.Sprintf("the header does not parse as RFC 8288 links: %q", printable.Cut(e.header, 200))
}

// link is one link-value of a Link header.
type link struct {
	target string
	next   bool
}

var errMalformedLink = errors.New("malformed Link header")

// parseLinks parses a Link header: comma-separated `<target>; param=value`
// entries, where values may be quoted and rel may list several relation
// types separated by spaces.
func parseLinks(h string) ([]link, error) {
	var links []link
	rest := strings.TrimSpace(h)
	for rest != "" {
		if rest[0] != '<' {
			return nil, errMalformedLink
		}
		end := strings.IndexByte(rest, '>')
		if end < 0 {
			return nil, errMalformedLink
		}
		l := link{target: strings.TrimSpace(rest[1:end])}
		if l.target == "" {
			return nil, errMalformedLink
		}
		rest = strings.TrimSpace(rest[end+1:])
		for rest != "" && rest[0] == ';' {
			rest = strings.TrimSpace(rest[1:])
			key, value, remaining, err := parseParam(rest)
			if err != nil {
				return nil, err
			}
			rest = strings.TrimSpace(remaining)
			if strings.EqualFold(key, "rel") {
				for _, rel := range strings.Fields(value) {
					if strings.EqualFold(rel, "next") {
						l.next = true
					}
				}
			}
		}
		links = append(links, l)
		switch {
		case rest == "":
		case rest[0] == ',':
			rest = strings.TrimSpace(rest[1:])
			if rest == "" {
				return nil, errMalformedLink
			}
		default:
			return nil, errMalformedLink
		}
	}
	if len(links) == 0 {
		return nil, errMalformedLink
	}
	return links, nil
}

// parseParam parses `key=value` or `key="quoted value"` (or a bare key) at
// the start of s and returns what follows.
func parseParam(s string) (key, value, rest string, err error) {
	i := strings.IndexAny(s, "=;,")
	if i < 0 {
		return strings.TrimSpace(s), "", "", nil
	}
	key = strings.TrimSpace(s[:i])
	if key == "" {
		return "", "", "", errMalformedLink
	}
	if s[i] != '=' {
		return key, "", s[i:], nil
	}
	s = strings.TrimSpace(s[i+1:])
	if strings.HasPrefix(s, `"`) {
		var b strings.Builder
		for j := 1; j < len(s); j++ {
			switch s[j] {
			case '\\':
				if j+1 < len(s) {
					j++
					b.WriteByte(s[j])
				}
			case '"':
				return key, b.String(), s[j+1:], nil
			default:
				b.WriteByte(s[j])
			}
		}
		return "", "", "", errMalformedLink
	}
	j := strings.IndexAny(s, ";,")
	if j < 0 {
		return key, strings.TrimSpace(s), "", nil
	}
	return key, strings.TrimSpace(s[:j]), s[j:], nil
}
