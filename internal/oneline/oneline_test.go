package oneline

import (
	"errors"
	"io"
	"io/fs"
	"testing"
)

// TestJoin: joined errors read on one line (errors.Join's line
// breaks showed as \n in a report) and still match what they join.
func TestJoin(t *testing.T) {
	for _, tt := range []struct {
		errs []error
		want string
	}{
		{nil, ""},
		{[]error{nil, nil}, ""},
		{[]error{io.EOF}, "EOF"},
		{[]error{io.EOF, nil, fs.ErrNotExist}, "EOF; file does not exist"},
	} {
		err := Join(tt.errs...)
		if got := ""; err != nil {
			got = err.Error()
			if got != tt.want {
				t.Errorf("Join(%v) = %q, want %q", tt.errs, got, tt.want)
			}
		} else if tt.want != "" {
			t.Errorf("Join(%v) = nil, want %q", tt.errs, tt.want)
		}
		for _, e := range tt.errs {
			if e != nil && !errors.Is(err, e) {
				t.Errorf("Join(%v) does not match %v", tt.errs, e)
			}
		}
	}
}
