// Package gitwriter keeps a working copy of the cluster repository with
// go-git: it clones or reuses it, commits edits (optionally OpenPGP-signed)
// and pushes them, retrying on races without ever force-pushing the
// tracked branch.
//
// It knows nothing of registries, policies or markers: the caller hands
// Update an Edit function that changes files in the worktree and says
// which.
//
// # Working copy
//
// Open clones the tracked branch, shallow (depth 1) and single-branch by
// default, or reuses the clone in Options.Workdir: it fetches the branch,
// hard-resets the worktree to the remote head and deletes every untracked
// file, ignored ones included; with Options.TrustWorktree, it moves the
// worktree by the files the commits changed and leaves the others (and
// untracked files) alone, and Clean checks everything on demand. The
// Workdir is imagebump's: a working copy that cannot be opened, whose
// HEAD, index or objects are unreadable, that is a clone of another URL
// (say, after the config's URL changed), or that has collected too many
// pack files is deleted and cloned afresh, and a clone of the same URL
// made by hand is reset as above, its checked-out branch moved to the
// tracked one. A non-empty Workdir without a .git is refused, never
// emptied.
//
// A reused worktree that holds a known commit is moved to the new head by
// the files that differ: the two trees are walked side by side, skipping
// every folder whose hash is the same on both sides. Otherwise (no
// recorded state, or a file that differs) it is hard-reset as git
// read-tree --reset -u and git clean -fdx would: everything the commit
// does not hold is deleted first, a file the old index shows clean with
// the commit's content is kept, and the others are written. Trees and
// blobs are read from the packs as git reads them (each pack's index
// searched in memory, deltas resolved from their bases; packset.go,
// treediff.go), and through go-git's store when that reader cannot (an
// object past 64 MiB, a pack folder go-git must answer for); either way
// every object read is checked against its name, and trees are parsed by
// gitwriter alone: go-git's own tree walk turns a subtree it cannot read
// into the end of the list. An object
// that does not match, or whose deltas form a cycle, fails the move, and
// the working copy is cloned afresh: by Open itself, or, when an Update,
// a Clean, a Restore or Changes meets it, by the next Open, as Close
// empties the working copy.
//
// A commit whose tree git refuses to check out (an entry named "..", "."
// or ".git" in any case or any form NTFS takes for it, such as ".git."
// or "git~1", also after a backslash; a link NTFS takes for
// ".gitmodules", or below a folder it takes so; a name that is both a
// folder and a file or link; a name with a slash; entries out of order)
// is refused too, before anything is written: Open fails saying so, and keeps a working
// copy it reused as it was rather than clone afresh, as a clone would
// meet the same commit. A clone that meets it keeps its objects, with an
// empty worktree and index and no state file: the next Opens fetch, and
// write the whole worktree once the branch is fixed. (A tree so
// malformed that the remote's git cannot send it, such as one with a bad
// mode, fails the clone on the server: each Open asks again, and nothing
// is downloaded.) A working copy whose own commit is refused now (an
// older imagebump accepted it) is hard-reset to a sound head. On a file
// system that takes two names for one (by case or Unicode normalization
// form, as macOS's and Windows' defaults do), a folder holding two such
// names is refused the same way (namefold.go). A tree more than
// 2,048 folders deep is refused the same way, as git's core.maxTreeDepth
// refuses it. Written as it stands, such a tree could put files outside
// the worktree or in .git. Every path written is checked again, as are an
// edit's paths (Update) and a path Restore is given, which must not lie
// beyond a link.
//
// Close keeps a reused working copy's object store small, as git's
// gc --auto does: past about 6,700 loose objects or 20 packs it folds the
// loose objects, and the packs too small to stand alone, into one pack
// (housekeep.go). It prunes nothing.
//
// # Commits and pushes
//
// Update calls Edit on a clean worktree at the remote head, compares the
// files it reports with that commit, and commits only those that differ,
// with the author as committer too: it makes their blobs, the trees along
// their paths and the commit, as git's plumbing does, and pushes them from
// memory while it stores them in the working copy and patches the Git index
// (.git/index); the local branch moves to the commit after that. A working
// copy left between the two by a crash is reset whole by the next Open, and
// one whose index, objects or branch could not be written is reset before
// it is used again. Without
// Update.PushBranch it pushes to the tracked branch, fast-forward only; when
// the push fails and a fetch shows the remote moved, it resets to the new
// head, calls Edit again and retries, up to Update.MaxAttempts times with
// jittered backoff, then fails with ErrConflict. With PushBranch, the
// commit goes to that branch, built on the tracked head and force-pushed
// (with a lease on the commit just seen) unless the branch already holds a
// commit with the same tree on the same parent.
//
// # Network and credentials
//
// Every network operation (clone, fetch, listing refs, push) gets its own
// Options.Timeout. Credentials are read from their files at each operation
// and passed to go-git per operation; the URL stored in .git/config has no
// userinfo, and errors and logs name the remote with credentials and query
// values removed. Refused credentials give an *AuthError, an SSH host key
// not in the known_hosts file (or a different one) a *HostKeyError, and a
// missing branch an error wrapping ErrBranchNotFound.
//
// No transport needs a git installation. file:// remotes are served in
// process (go-git's own file transport would run git-upload-pack and
// git-receive-pack): importing gitwriter installs that transport for the
// whole process. It fetches with the same depth and shallow boundary as
// git, refuses a ref update when the ref moved since it was read, refuses
// to move the checked-out branch of a non-bare remote, and runs no
// server-side hooks.
//
// A reused shallow working copy fetches a new head of its branch as a thin
// pack (http, https and ssh remotes; see thinfetch.go): go-git's own fetch
// at depth 1 gets the new head's whole tree from git's server each time.
// After every fetch the shallow list keeps only the boundaries that a ref,
// or a reflog a git command left, still reaches (shallow.go), as git's gc
// would: each fetch sends the list whole, and it grew by a line per
// fetched head.
package gitwriter
