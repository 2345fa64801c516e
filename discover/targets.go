package discover

import (
	"fmt"
	"slices"
	"strings"

	"github.com/imagebump/imagebump/config"
)

// A config's targets decide which markers move: a target scans its
// git.paths and applies the policies its policies globs select (a Flux
// automation's target applies its own namespace, flux-system:*). A policy
// named after the namespace of its Deployment (staging:web) under a target
// that applies flux-system:* only is written and marked, and then no cycle
// ever moves it; validate and plan have nothing to say about a marker no
// target reads. So init names new policies where the targets look, and
// says so when it cannot.

// scans reports whether target t scans file, a slash path relative to the
// repository root: t has no git.paths, or one of them is file or a folder
// above it.
func scans(t config.Target, file string) bool {
	if t.Git == nil || len(t.Git.Paths) == 0 {
		return true
	}
	for _, p := range t.Git.Paths {
		p = strings.Trim(strings.TrimPrefix(p, "./"), "/")
		if p == "" || p == "." || p == file || strings.HasPrefix(file, p+"/") {
			return true
		}
	}
	return false
}

// applied reports whether some target scans file and applies the policy
// called name.
func applied(targets []config.Target, name, file string) bool {
	return slices.ContainsFunc(targets, func(t config.Target) bool { return scans(t, file) && t.Selects(name) })
}

// appliedAll reports whether every use of p would be applied under the
// policy called name.
func appliedAll(targets []config.Target, name string, uses []Use) bool {
	for _, u := range uses {
		if !applied(targets, name, u.File) {
			return false
		}
	}
	return true
}

// fitNamespace returns the namespace to name a new policy in: ns when the
// targets apply ns:short to every use (or there are no targets), else the
// first namespace that a glob of a target scanning the uses' files names
// literally (flux-system in flux-system:*) and under which every use is
// applied, with a note saying why; ns again when none fits (Unapplied then
// says so).
func fitNamespace(uses []Use, ns, short string, targets []config.Target) (string, string) {
	if len(targets) == 0 || appliedAll(targets, ns+":"+short, uses) {
		return ns, ""
	}
	var tried []string
	for _, t := range targets {
		if !slices.ContainsFunc(uses, func(u Use) bool { return scans(t, u.File) }) {
			continue
		}
		for _, g := range t.Policies {
			cand, _, _ := strings.Cut(config.NormalizeName(g), ":")
			if cand == ns || slices.Contains(tried, cand) || strings.ContainsAny(cand, `*?[\`) {
				continue
			}
			tried = append(tried, cand)
			if appliedAll(targets, cand+":"+short, uses) {
				return cand, fmt.Sprintf("named in namespace %s, which target %s applies (policies: %s), not in %s: no target applies %s:%s", cand, t.Name, strings.Join(t.Policies, ", "), ns, ns, short)
			}
		}
	}
	return ns, ""
}

// checkApplied sets p.Unapplied when some use of p is in a file that no
// target applying p's policy scans.
func checkApplied(p *Proposal, targets []config.Target) {
	if len(targets) == 0 || p.Choice || p.Policy == "" {
		return
	}
	var unscanned, unselected []string
	var skipping []config.Target
	for _, u := range p.Uses {
		if applied(targets, p.Policy, u.File) || slices.Contains(unscanned, u.File) || slices.Contains(unselected, u.File) {
			continue
		}
		var by []config.Target
		for _, t := range targets {
			if scans(t, u.File) {
				by = append(by, t)
			}
		}
		if len(by) == 0 {
			unscanned = append(unscanned, u.File)
			continue
		}
		unselected = append(unselected, u.File)
		for _, t := range by {
			if !slices.ContainsFunc(skipping, func(s config.Target) bool { return s.Name == t.Name }) {
				skipping = append(skipping, t)
			}
		}
	}
	var why []string
	for _, t := range skipping {
		why = append(why, fmt.Sprintf("target %s scans %s but its policies (%s) leave %s out: add %s to them",
			t.Name, strings.Join(scannedBy(t, unselected), ", "), strings.Join(t.Policies, ", "), p.Policy, p.Policy))
	}
	if len(unscanned) > 0 {
		why = append(why, fmt.Sprintf("no target scans %s: add it to the git.paths of a target that applies %s", strings.Join(unscanned, ", "), p.Policy))
	}
	if len(why) > 0 {
		p.Unapplied = strings.Join(why, "; ")
	}
}

// scannedBy returns the files that t scans.
func scannedBy(t config.Target, files []string) []string {
	var out []string
	for _, f := range files {
		if scans(t, f) {
			out = append(out, f)
		}
	}
	return out
}
