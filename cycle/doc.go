// Package cycle ties imagebump's parts together. It is the one place that
// knows them all: config, registry, policy, setters, gitwriter and
// pullrequest never import each other.
//
//   - Run is one scan of a checkout: it finds which policies the markers
//     name (a cheap line scan), lists the tags of only those repositories,
//     selects the latest tag per policy, resolves digests where a policy pins
//     them, and hands the picks to the setters.
//   - RunTarget is one target's whole cycle: open or reuse the working copy,
//     Run, render the commit message, commit, push to the tracked branch or
//     to imagebump's own branch, and open, update or close the pull request.
//     `imagebump run` and `imagebump serve` call it.
//   - Plan is the read-only twin behind `imagebump plan` and `apply`, on a
//     local checkout or a read-only clone; Validate checks markers offline.
//   - NewRegistry, GitOptions and NewPullRequestProvider turn the config into
//     clients; nothing else does.
//
// Errors follow one rule: what stops a whole target (a clone, a push, a
// cancelled ctx) is the error; a failing registry or file is reported in the
// Report and the rest goes on.
package cycle
