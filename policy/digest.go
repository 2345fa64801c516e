package policy

import "errors"

// DigestMode says when the digest of the latest tag is resolved and pinned.
// The modes are those of Flux's ImagePolicy digestReflectionPolicy (Never,
// IfNotPresent, Always), spelled in lower camel case; the empty mode is
// DigestNever, Flux's default.
type DigestMode string

// Digest reflection modes.
const (
	DigestNever        DigestMode = "never"
	DigestAlways       DigestMode = "always"
	DigestIfNotPresent DigestMode = "ifNotPresent"
)

// validate accepts the empty mode and the three named ones.
func (m DigestMode) validate() error {
	switch m {
	case "", DigestNever, DigestAlways, DigestIfNotPresent:
		return nil
	}
	return errors.New(`must be "never", "always" or "ifNotPresent"`)
}

// Reflects reports whether the policy records a digest at all, so that a
// full reference is pinned (name:tag@sha256:...) and a ":digest" marker has
// a value. It is false for DigestNever and the empty mode.
func (m DigestMode) Reflects() bool {
	return m == DigestAlways || m == DigestIfNotPresent
}

// NeedsLookup reports whether a run must resolve the digest of latestTag,
// given the tag and digest already recorded for the same repository
// (empty when none is known, or when the repository changed):
//
//   - never (and ""): false; no digest is recorded.
//   - always: true, on every run, so a tag that was pushed again is noticed.
//   - ifNotPresent: true unless knownTag is latestTag and knownDigest is set,
//     in which case the known digest stands.
//
// This matches how Flux's ImagePolicy treats its three modes.
func (m DigestMode) NeedsLookup(latestTag, knownTag, knownDigest string) bool {
	switch m {
	case DigestAlways:
		return true
	case DigestIfNotPresent:
		return knownTag != latestTag || knownDigest == ""
	}
	return false
}
