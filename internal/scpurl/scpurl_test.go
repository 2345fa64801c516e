package scpurl

import "testing"

// TestParse: Git's rule, a colon before any slash and no "://", tells an
// scp-like address from a URL and a local path; Plain tells one written
// with a remote's characters from a mistyped URL or a credential.
func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in    string
		want  Address
		ok    bool
		plain bool
	}{
		{"git@github.com:acme/fleet.git", Address{"git", "github.com", "acme/fleet.git"}, true, true},
		{"github.com:acme/fleet.git", Address{"", "github.com", "acme/fleet.git"}, true, true},
		{"git@host:/srv/git/fleet.git", Address{"git", "host", "/srv/git/fleet.git"}, true, true},
		{"git@[::1]:fleet.git", Address{"git", "::1", "fleet.git"}, true, true},
		{"[fe80::1]:fleet.git", Address{"", "fe80::1", "fleet.git"}, true, true},
		{"git@host:team@2/repo", Address{"git", "host", "team@2/repo"}, true, false},
		{"user:secret@host:repo", Address{"", "user", "secret@host:repo"}, true, false},
		{"git@host:repo?private_token=x", Address{"git", "host", "repo?private_token=x"}, true, false},
		{"bad user@host:repo", Address{"bad user", "host", "repo"}, true, false},
		{"ssh://git@host/repo", Address{}, false, false},
		{"https://host/repo", Address{}, false, false},
		{"./local:path", Address{}, false, false},
		{"/srv/git/repo.git", Address{}, false, false},
		{"C:/repo", Address{}, false, false},
		{`C:\repo`, Address{}, false, false},
		{"host:", Address{}, false, false},
		{":repo", Address{}, false, false},
		{"git@[::1:repo", Address{}, false, false},
		{"repo", Address{}, false, false},
	} {
		got, ok := Parse(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
		if ok && got.Plain() != tt.plain {
			t.Errorf("Parse(%q).Plain() = %v, want %v", tt.in, got.Plain(), tt.plain)
		}
	}
}

func TestHostPort(t *testing.T) {
	if got := (Address{Host: "::1"}).HostPort(); got != "[::1]" {
		t.Errorf("HostPort of ::1 = %q", got)
	}
	if got := (Address{Host: "github.com"}).HostPort(); got != "github.com" {
		t.Errorf("HostPort of github.com = %q", got)
	}
}

// FuzzParse: Parse never panics, and an address it returns puts back the
// string it came from.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"git@github.com:acme/fleet.git", "[::1]:x", "a@[b]:c", "C:/x", "u:p@h:r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := Parse(s)
		if !ok {
			return
		}
		back := a.HostPort() + ":" + a.Path
		if a.User != "" || s[0] == '@' {
			back = a.User + "@" + back
		}
		if back != s && "["+a.Host+"]:"+a.Path != s && a.User+"@["+a.Host+"]:"+a.Path != s {
			t.Errorf("Parse(%q) = %+v, which writes back %q", s, a, back)
		}
	})
}
