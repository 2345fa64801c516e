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
		{name: "only one line ending is trimmed", content: "s3cret\n\n", want: "s3cret\n"},
		{name: "inner spaces kept", content: " a b \n", want: " a b "},
		{name: "empty", content: "", wantErr: ErrEmpty},
		{name: "newline only", content: "\n", wantErr: ErrEmpty},
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
