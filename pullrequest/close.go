package pullrequest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/imagebump/imagebump/internal/oneline"
)

// Close closes the open pull request from head into base, for a branch that
// no longer proposes anything: its bumps were made on base by other means,
// or the tags they named were withdrawn, so the caller has no changes and
// the open pull request proposes obsolete ones. When reason is not blank it
// is posted as a comment once the pull request is closed, to say why; a
// comment refused (a token that may close but not comment) is reported in
// the error, with the result, and not retried: the pull request is closed.
// ready, when not nil, is called once an open pull request is found and
// before anything is written; its error stops Close (the caller's check
// that closing drops nobody's work).
//
// With no open pull request, Close makes no call that writes and returns
// Outcome None; a second Close after a first one is therefore read-only.
// Should several be open (by hand: forges refuse a second one from the same
// branch), each is closed, since all of them propose the same branch; the
// result names the most recent.
//
// Close marks the body of each pull request it closes (a hidden comment
// line, written before closing): one closed as stale was not turned down,
// so, unlike one closed by hand, it does not keep its bumps from being
// proposed again. Should git.branch lose the bumps (a revert), or the
// tags come back, the next run opens a new pull request for them.
func Close(ctx context.Context, p Provider, head, base, reason string, ready func() error) (*Result, error) {
	open, err := openPRs(ctx, p, head, base)
	if err != nil || len(open) == 0 {
		return noneOr(p, err)
	}
	if ready != nil {
		if err := ready(); err != nil {
			return nil, err
		}
	}
	res := &Result{Number: open[0].Number, URL: open[0].URL, Outcome: Closed, Provider: p.Name()}
	reason = strings.TrimSpace(reason)
	var uncommented []error
	for _, pr := range open {
		refused, err := closeStale(ctx, p, pr, reason)
		if err != nil {
			return nil, err
		}
		if refused != nil {
			uncommented = append(uncommented, fmt.Errorf("closed pull request #%d, but the comment saying why was refused: %w", pr.Number, refused))
		}
	}
	// One line: a target's error is one line of its report.
	return res, oneline.Join(uncommented...)
}

// closeStale closes pr as stale: its body marked (once), then closed, then
// comment posted when not blank. A comment refused leaves pr closed and
// comes back apart, as refused; err is a write that failed before.
func closeStale(ctx context.Context, p Provider, pr PR, comment string) (refused, err error) {
	if !ClosedAsStale(pr.Body) {
		if _, err := p.Update(ctx, pr.Number, pr.Title, markStale(pr.Body)); err != nil {
			return nil, err
		}
	}
	if err := p.Close(ctx, pr.Number); err != nil {
		return nil, err
	}
	if comment != "" {
		return p.Comment(ctx, pr.Number, comment), nil
	}
	return nil, nil
}

// PlanClose returns what Close would do, calling only p.List: Outcome
// Closed with the pull request it would close, or None. ready is Close's:
// its error, when an open pull request is found, is PlanClose's too.
func PlanClose(ctx context.Context, p Provider, head, base string, ready func() error) (*Result, error) {
	open, err := openPRs(ctx, p, head, base)
	if err != nil || len(open) == 0 {
		return noneOr(p, err)
	}
	if ready != nil {
		if err := ready(); err != nil {
			return nil, err
		}
	}
	return &Result{Number: open[0].Number, URL: open[0].URL, Outcome: Closed, Provider: p.Name()}, nil
}

// openPRs returns the open pull requests from head into base, most recent
// first.
func openPRs(ctx context.Context, p Provider, head, base string) ([]PR, error) {
	if err := checkBranches(head, base); err != nil {
		return nil, err
	}
	prs, err := p.List(ctx, head, base)
	if err != nil {
		return nil, err
	}
	open := slices.DeleteFunc(slices.Clone(prs), func(pr PR) bool { return pr.State != StateOpen })
	slices.SortStableFunc(open, func(a, b PR) int { return cmp.Compare(b.Number, a.Number) })
	return open, nil
}

func noneOr(p Provider, err error) (*Result, error) {
	if err != nil {
		return nil, err
	}
	return &Result{Outcome: None, Provider: p.Name()}, nil
}
