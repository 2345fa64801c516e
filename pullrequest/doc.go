// Package pullrequest keeps one pull request open per imagebump branch, on
// any provider: it opens it, updates its title and body when the bumps
// change, and never opens a duplicate or reopens a closed or merged one for
// the same content.
//
// The package is provider-neutral. A forge is reached through a Provider,
// a small adapter with six calls (list, create, update, add labels,
// comment, close); the
// subpackages github, gitlab and gitea implement it with each forge's own
// client library (gitea also serves Forgejo).
//
// # Lifecycle
//
// Ensure applies these rules, in this order, to the pull requests from
// Request.Head into Request.Base:
//
//   - An open pull request exists: its title and body are updated when they
//     differ from the request (Outcome "updated"), and the labels added to
//     the request since its body recorded them (Request.Body, LabelsOf) are
//     added with them; otherwise nothing at all is written (Outcome
//     "unchanged"). A label someone removed is never added back, and labels
//     it has are never touched. When several are open (made by hand, or by
//     a race on a forge that allows it), the oldest is kept current and the
//     others are closed as its duplicates (Result.Duplicates).
//   - No open pull request, and the most recent closed or merged one
//     carried the same content (the same set of file, policy, old, new):
//     nothing is written (Outcome "skipped"). A closed pull request is
//     never reopened, and the same bump is never proposed again.
//   - Otherwise a new pull request is opened (Outcome "opened") and the
//     labels are added.
//
// If creating fails because the forge already has an open pull request for
// the branch (another imagebump won a race), Ensure lists again and treats
// the one it finds as the open pull request.
//
// Plan makes the same decision with the list call only, for a dry run.
//
// # Closing
//
// When the branch no longer proposes anything (the bumps were made on the
// base branch by other means, or the tags were withdrawn), the caller has
// no changes for Ensure and calls Close instead: it posts the caller's
// reason as a comment on the open pull request and closes it (Outcome
// "closed"), or, with none open, writes nothing (Outcome "none"). A pull
// request Close closed counts as any closed one afterwards. PlanClose is
// its read-only preview.
//
// # Content
//
// The body is a Markdown table of the changes (Body) that ends with a hidden
// marker holding ContentKey, a SHA-256 over the sorted change set. The
// marker is how a later run recognises a closed or merged pull request that
// carried the same bumps. The key leaves line numbers out: the same bump in
// a file whose lines moved is the same content.
//
// # Errors and secrets
//
// Adapters return *Error for a failed call: it names the provider, the
// repository, the operation and, for 401, 403 and 404 answers, what the
// token lacks. Errors never hold a token or a URL with credentials.
package pullrequest
