package gitwriter

import (
	"errors"
	"io"
	"io/fs"
	"testing"
)

// TestJoinErrors: joined errors read on one line (errors.Join's line
// breaks showed as \n in a report) and still match what they join.
func TestJoinErrors(t *testing.T) {
	for _, tt := range []struct {
		errs []error
		want string
	}{
		{nil, ""},
		{[]error{nil, nil}, ""},
		{[]error{io.EOF}, "EOF"},
		{[]error{io.EOF, nil, fs.ErrNotExist}, "EOF; file does not exist"},
	} {
		err := joinErrors(tt.errs...)
		if got := ""; err != nil {
			got = err.Error()
			if got != tt.want {
				t.Errorf("joinErrors(%v) = %q, want %q", tt.errs, got, tt.want)
			}
		} else if tt.want != "" {
			t.Errorf("joinErrors(%v) = nil, want %q", tt.errs, tt.want)
		}
		for _, e := range tt.errs {
			if e != nil && !errors.Is(err, e) {
				t.Errorf("joinErrors(%v) does not match %v", tt.errs, e)
			}
		}
	}
}
