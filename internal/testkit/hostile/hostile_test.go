package hostile_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/imagebump/imagebump/internal/testkit/hostile"
	"github.com/imagebump/imagebump/policy"
	"github.com/imagebump/imagebump/registry"
)

// get sends a GET to the server, with basic credentials when user is set.
func get(t *testing.T, client *http.Client, url, user, pass string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func decodeTags(t *testing.T, r io.Reader) []string {
	t.Helper()
	var list struct{ Tags []string }
	if err := json.NewDecoder(r).Decode(&list); err != nil {
		t.Fatal(err)
	}
	return list.Tags
}

// TestModes checks that each mode misbehaves as documented, over plain
// HTTP, so that the tests that rely on the kit test what they claim.
func TestModes(t *testing.T) {
	s := hostile.Start(t, hostile.Options{DripInterval: 20 * time.Millisecond, ErrorBodySize: 1 << 20})
	client := &http.Client{Timeout: 5 * time.Second}
	tagsURL := func(m hostile.Mode, query string) string {
		return s.URL + "/v2/" + string(m) + "/app/tags/list" + query
	}

	t.Run("endless link", func(t *testing.T) {
		url := tagsURL(hostile.EndlessLink, "?n=5")
		seen := map[string]bool{}
		for range 3 {
			resp := get(t, client, url, "", "")
			link := resp.Header.Get("Link")
			if !strings.HasSuffix(link, `>; rel="next"`) {
				t.Fatalf("Link %q does not name a next page", link)
			}
			for _, tag := range decodeTags(t, resp.Body) {
				if seen[tag] {
					t.Fatalf("tag %s listed twice", tag)
				}
				seen[tag] = true
			}
			url = s.URL + strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
		}
	})
	t.Run("no link", func(t *testing.T) {
		resp := get(t, client, tagsURL(hostile.NoLink, "?n=7"), "", "")
		tags := decodeTags(t, resp.Body)
		if len(tags) != 7 || resp.Header.Get("Link") != "" {
			t.Fatalf("got %d tags and Link %q, want a full page of 7 and no Link", len(tags), resp.Header.Get("Link"))
		}
		next := decodeTags(t, get(t, client, tagsURL(hostile.NoLink, "?n=7&last="+tags[6]), "", "").Body)
		if len(next) != 7 || next[0] <= tags[6] {
			t.Errorf("the page after %s is %q, want 7 new tags after it", tags[6], next)
		}
	})
	t.Run("hang after headers", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tagsURL(hostile.HangAfterHeaders, ""), nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("no headers: %v", err)
		}
		defer resp.Body.Close()
		if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("reading the body: %v, want the deadline", err)
		}
	})
	t.Run("slow drip", func(t *testing.T) {
		start := time.Now()
		tags := decodeTags(t, get(t, client, tagsURL(hostile.SlowDrip, ""), "", "").Body)
		if len(tags) != len(hostile.ValidTags()) || time.Since(start) < time.Second {
			t.Errorf("got %q in %v, want the tags slowly", tags, time.Since(start))
		}
	})
	t.Run("huge error body", func(t *testing.T) {
		resp := get(t, client, tagsURL(hostile.HugeErrorBody, ""), "u", "the-password")
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusForbidden || len(b) < 1<<20 || !strings.Contains(string(b[:200]), "the-password") {
			t.Errorf("status %d, %d bytes starting %q", resp.StatusCode, len(b), b[:min(len(b), 200)])
		}
	})
	t.Run("invalid tags", func(t *testing.T) {
		tags := decodeTags(t, get(t, client, tagsURL(hostile.InvalidTags, ""), "", "").Body)
		if want := len(hostile.ValidTags()) + len(hostile.BadTags()); len(tags) != want {
			t.Errorf("%d tags, want %d", len(tags), want)
		}
	})
	t.Run("bad digest header", func(t *testing.T) {
		resp := get(t, client, s.URL+"/v2/bad-digest/app/manifests/"+hostile.DigestTagHeader, "", "")
		if d := resp.Header.Get("Docker-Content-Digest"); !strings.Contains(d, "..") {
			t.Errorf("Docker-Content-Digest %q is not the malformed one", d)
		}
	})
}

func TestRefusedAndBlackhole(t *testing.T) {
	refused := hostile.Refused(t)
	_, err := net.DialTimeout("tcp", refused, 2*time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dialing Refused: %v, want connection refused", err)
	}
	// No server of the test can take the port meanwhile.
	if l, err := net.Listen("tcp", refused); err == nil {
		l.Close()
		t.Errorf("a server could listen on Refused's %s", refused)
	}
	conn, err := net.DialTimeout("tcp", hostile.Blackhole(t), 2*time.Second)
	if err != nil {
		t.Fatalf("dialing Blackhole: %v", err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := conn.Write([]byte("GET /v2/ HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	var ne net.Error
	if _, err := conn.Read(make([]byte, 1)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("reading from Blackhole: %v, want a timeout", err)
	}
}

// TestHostileTagsNeverSelected lists a repository whose registry mixes
// hostile tags with valid ones, through the registry client, and selects
// with every policy kind: only a valid tag can win, and every hostile one
// is counted.
func TestHostileTagsNeverSelected(t *testing.T) {
	s := hostile.Start(t, hostile.Options{})
	c, err := registry.New(registry.Options{Hosts: []registry.Host{{Host: s.Host, Insecure: true}}})
	if err != nil {
		t.Fatal(err)
	}
	res := c.Cycle().Scan(context.Background(), []string{s.Repo(hostile.InvalidTags, "app"), s.Repo(hostile.Healthy, "app")}, 2)
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.Repository, r.Err)
		}
	}
	for _, spec := range []policy.Spec{{SemVer: "*"}, {Alphabetical: "asc"}, {Alphabetical: "desc"}, {Numerical: "asc"}} {
		p, err := policy.New(spec)
		if err != nil {
			t.Fatal(err)
		}
		sel, err := p.SelectContext(context.Background(), res[0].Tags)
		if err != nil {
			t.Fatal(err)
		}
		if sel.Latest != "" && !policy.ValidTag(sel.Latest) {
			t.Errorf("%+v picked %q", spec, sel.Latest)
		}
		if len(sel.Invalid) != len(hostile.BadTags()) {
			t.Errorf("%+v: %d invalid tags, want %d", spec, len(sel.Invalid), len(hostile.BadTags()))
		}
	}
}
