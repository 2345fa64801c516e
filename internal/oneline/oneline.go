// Package oneline joins errors on one line: a cycle's error is one line of
// its report and of a target's status, where errors.Join's line breaks
// showed as \n. gitwriter and pullrequest both use it.
package oneline

import "strings"

// Join is errors.Join on one line, its errors separated by "; ". It
// returns nil when every error is nil, and the result matches (errors.Is,
// errors.As) each error it joins.
func Join(errs ...error) error {
	var kept []error
	for _, err := range errs {
		if err != nil {
			kept = append(kept, err)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return &joined{errs: kept}
}

type joined struct{ errs []error }

func (e *joined) Error() string {
	msgs := make([]string, len(e.errs))
	for i, err := range e.errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e *joined) Unwrap() []error { return e.errs }
