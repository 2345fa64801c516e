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
