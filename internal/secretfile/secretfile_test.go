package secretfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    string
		wantErr error
	}{
		{name: "plain", content: "s3cret", want: "s3cret"},
		{name: "trailing newline", content: "s3cret\n", want: "s3cret"},
		{name: "crlf", content: "s3cret\r\n", want: "s3cret"},
		{name: "blank lines after it", content: "s3cret\n\n\r\n", want: "s3cret"},
		{name: "inner line endings kept", content: "s3\ncret\n", want: "s3\ncret"},
		{name: "trailing spaces kept", content: "s3cret \t\n", want: "s3cret \t"},
		{name: "inner spaces kept", content: " a b \n", want: " a b "},
		{name: "empty", content: "", wantErr: ErrEmpty},
		{name: "newline only", content: "\n", wantErr: ErrEmpty},
		{name: "blank lines only", content: "\r\n\n", wantErr: ErrEmpty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "secret")
			if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := Read(p)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("Read = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReadMissingNamesPathNotContent(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope")
	_, err := Read(p)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), p) {
		t.Errorf("err = %v, want not-exist naming %s", err, p)
	}
}

func TestReadEnv(t *testing.T) {
	t.Setenv("IMAGEBUMP_TEST_SECRET", "t0ken\n")
	t.Setenv("IMAGEBUMP_TEST_EMPTY", "")
	tests := []struct {
		ref     string
		want    string
		wantErr string
	}{
		{ref: "env:IMAGEBUMP_TEST_SECRET", want: "t0ken"},
		{ref: "env:IMAGEBUMP_TEST_EMPTY", wantErr: "environment variable IMAGEBUMP_TEST_EMPTY: file is empty"},
		{ref: "env:IMAGEBUMP_TEST_UNSET_X", wantErr: "environment variable IMAGEBUMP_TEST_UNSET_X is not set"},
		{ref: "env:1BAD", wantErr: "not a valid environment variable reference"},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			got, err := Read(tt.ref)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "t0ken") {
					t.Error("the error shows a secret")
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Read = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, MaxSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		wantErr error
		wantMsg string
	}{
		{name: "directory", path: dir, wantErr: ErrNotRegular, wantMsg: "a directory"},
		{name: "too large", path: big, wantErr: ErrTooLarge},
		{name: "symlink to a regular file", path: link},
	}
	if _, err := os.Stat("/dev/null"); err == nil {
		tests = append(tests, struct {
			name    string
			path    string
			wantErr error
			wantMsg string
		}{name: "character device", path: "/dev/null", wantErr: ErrNotRegular, wantMsg: "a character device"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read(tt.path)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Read(%s) = %q, %v; want %v", tt.path, got, err, tt.wantErr)
			}
			if err != nil && (!strings.Contains(err.Error(), tt.path) || !strings.Contains(err.Error(), tt.wantMsg)) {
				t.Errorf("error %q does not name %s and %q", err, tt.path, tt.wantMsg)
			}
			if err == nil && got != "s3cret" {
				t.Errorf("Read = %q, want s3cret", got)
			}
		})
	}
}

func TestReadFileLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p, 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile with limit 4 of 5 bytes: %v, want ErrTooLarge", err)
	}
	if b, err := ReadFile(p, 5); err != nil || string(b) != "12345" {
		t.Errorf("ReadFile with limit 5 = %q, %v", b, err)
	}
}

// TestLooksInline: a secret pasted where a file's path goes is refused
// without being shown (shown as a missing file's path, it reached every
// log); file names, even long ones, are not taken for one.
func TestLooksInline(t *testing.T) {
	for _, tt := range []struct {
		ref  string
		want bool
	}{
		{"ghp_Sup3rS3cretValue123456", true},
		{"AKIAIOSFODNN7EXAMPLE", true},
		{"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", true},
		{"dGhpcyBpcyBhIHNlY3JldCB0b2tlbiE9PQ==", true},
		{"ASIA_ECR_PASSWORD", false},
		{"AKIA-key-file-for-ci", false},
		{"ImagebumpGithubAppPrivateKey2024", false},
		{"secrets/imagebump/github-app-private-key-production", false},
		{"glpat-xxxxxxxxxxxxxxxxxxxx", true},
		{"dckr_pat_AbCdEfGhIjKlMnOp", true},
		{"9fQ2xLr7Tz4mKp1Vb8Nc3Hd6Jw0Ys5Ua", true},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n", true},
		{"token", false},
		{"ghp_", false},
		{"secrets/ghp_Sup3rS3cretValue123456", false},
		{"github-token.txt", false},
		{"GITHUB_TOKEN_FILE", false},
		{"imagebump-github-token-2024-rotated-weekly", false},
		{"registry_password_for_prod_cluster", false},
		{"env:GITHUB_TOKEN", false},
		{"/run/secrets/token", false},
	} {
		if got := LooksInline(tt.ref); got != tt.want {
			t.Errorf("LooksInline(%q) = %v, want %v", tt.ref, got, tt.want)
		}
	}
}

// TestShown: a short password pasted where its file's path goes, too short
// for LooksInline, is not printed by the errors and warnings that name the
// file; file names, with or without a folder, are.
func TestShown(t *testing.T) {
	for _, tt := range []struct {
		ref    string
		hidden bool
	}{
		{"Tr0ub4dor3xyzQ", true},
		{"/etc/imagebump/Tr0ub4dor3xyzQ", true}, // made absolute by the config
		{"hunter2!", true},
		{"correct horse battery staple", true},
		{"p@ssw0rd", true},
		{"ghp_Sup3rS3cretValue123456", true},
		{"token", false},
		{"/var/run/secrets/registry/password", false},
		{"github-token.txt", false},
		{"id_ed25519", false},
		{"GITHUB_TOKEN_FILE", false},
		{"Key2024.asc", false},
		{"env:GIT_TOKEN", false},
		{`C:\secrets\token`, false},
	} {
		got := Shown(tt.ref)
		if hidden := got == Hidden; hidden != tt.hidden || (!hidden && got != tt.ref) {
			t.Errorf("Shown(%q) = %q, want hidden %v", tt.ref, got, tt.hidden)
		}
	}
}

// TestReadMissingHidesAPastedPassword: the error of a missing file whose
// name looks like a password does not print it.
func TestReadMissingHidesAPastedPassword(t *testing.T) {
	ref := filepath.Join(t.TempDir(), "Tr0ub4dor3xyzQ")
	_, err := Read(ref)
	if !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), "Tr0ub4dor") || !strings.Contains(err.Error(), Hidden) {
		t.Errorf("Read(%q) = %v, want a not-exist error that hides the name", ref, err)
	}
	ref = filepath.Join(t.TempDir(), "password")
	if _, err := Read(ref); err == nil || !strings.Contains(err.Error(), ref) {
		t.Errorf("Read(%q) = %v, want an error naming the file", ref, err)
	}
}
