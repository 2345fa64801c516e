// Package report defines imagebump's machine-readable output: the JSON
// documents of `plan -o json`, `apply -o json`, `run -o json` and
// `validate -o json`, and the per-target shapes that `serve` reuses in its
// status API. Their shape is stable: fields are only ever added, and a
// breaking change would bump Version. JSON Schemas of the documents ship in
// this folder (PlanSchema, RunSchema), kept equal to these types by a test.
package report

import (
	_ "embed"
	"time"

	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/pullrequest"
	"github.com/imagebump/imagebump/setters"
)

// Version is the schema version of every document here.
const Version = 1

// Schemas of the documents (JSON Schema draft 2020-12).
var (
	//go:embed plan.schema.json
	PlanSchema []byte
	//go:embed run.schema.json
	RunSchema []byte
)

// Plan is the document of `plan -o json` and `apply -o json`.
type Plan struct {
	// Version is the schema version, 1.
	Version int `json:"version"`
	// Applied is true for apply when every edit it made was written;
	// false when a file could not be written (a problem says which, and
	// Changes lists the edits written).
	Applied  bool      `json:"applied"`
	Policies []Policy  `json:"policies"`
	Changes  []Change  `json:"changes"`
	Problems []Problem `json:"problems"`
	Files    Files     `json:"files"`
	// Markers counts the markers found; 0 means nothing to keep current.
	Markers int `json:"markers"`
	// Unreferenced names the policies that no marker names; their
	// registries were not asked.
	Unreferenced []string `json:"unreferenced"`
	// PullRequest is what a run would do to the target's pull request
	// (plan only, when the target has push.pullRequest and something would
	// happen).
	PullRequest *pullrequest.Result `json:"pullRequest,omitempty"`
	// PullRequestError says why the pull request could not be checked, or
	// why a run would stop before it (pushRefused).
	PullRequestError string `json:"pullRequestError,omitempty"`
	// Held is set when a run would leave push.branch and its pull request
	// as they are while a policy fails (plan without --repo only).
	Held bool `json:"held,omitempty"`
	// PushRefused is set when a run would not push, as push.branch ends in
	// a commit imagebump did not make (plan without --repo only).
	PushRefused bool `json:"pushRefused,omitempty"`
	// Error says why plan or apply stopped before it had a result (the
	// config, the clone); the other fields are then empty, and the exit
	// code is not 0.
	Error string `json:"error,omitempty"`
}

// Policy is one policy's selection.
type Policy struct {
	Name       string `json:"name"`
	Repository string `json:"repository"`
	// Latest is the picked tag, "" when the policy failed.
	Latest string `json:"latest"`
	// Digest is pinned with the tag (digest: always or ifNotPresent).
	Digest string `json:"digest,omitempty"`
	// Tags is how many tags the registry listed; Invalid, Excluded,
	// Filtered and Skipped how many each step dropped; Candidates how many
	// competed.
	Tags       int `json:"tags"`
	Excluded   int `json:"excluded"`
	Filtered   int `json:"filtered"`
	Skipped    int `json:"skipped"`
	Invalid    int `json:"invalid"`
	Candidates int `json:"candidates"`
	// Warnings explain tags the policy skipped with a warning.
	Warnings []string `json:"warnings,omitempty"`
	// Error says why the policy has no result; its markers are left alone.
	Error string `json:"error,omitempty"`
	// Held is the policy's active hold: Latest is what it would pick, but
	// its markers stay where they are.
	Held *Hold `json:"held,omitempty"`
	// HeldBack are the tags, better by the rule than Latest, that a gate
	// (verify, minAge) held back, best first.
	HeldBack []HeldBack `json:"heldBack,omitempty"`
}

// HeldBack is a tag a gate held back.
type HeldBack struct {
	Tag    string `json:"tag"`
	Digest string `json:"digest,omitempty"`
	// Gate is "unsigned", "invalid signature" or "too young".
	Gate   string `json:"gate"`
	Detail string `json:"detail,omitempty"`
	// Until is when the tag becomes a candidate (RFC 3339), for "too
	// young".
	Until string `json:"until,omitempty"`
}

// Hold is an active hold on a policy.
type Hold struct {
	Reason string `json:"reason"`
	// Until is when the hold ends (RFC 3339), absent when it lasts until
	// released.
	Until string `json:"until,omitempty"`
}

// Change is one edit.
type Change struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Policy string `json:"policy"`
	Field  string `json:"field"`
	From   string `json:"from"`
	To     string `json:"to"`
}

// Problem is one thing that could not be done. File and Line are set when
// the problem has a place in a file (a marker, a file, a config key);
// Policy when it concerns one policy.
type Problem struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Policy  string `json:"policy,omitempty"`
	Message string `json:"message"`
}

// Files counts the files looked at.
type Files struct {
	// Scanned counts the YAML files looked at: Read plus Cached.
	Scanned int `json:"scanned"`
	// Read counts the YAML files whose bytes were read.
	Read int `json:"read"`
	// Cached counts the YAML files served from the marker index without
	// reading them.
	Cached  int      `json:"cached"`
	Changed []string `json:"changed"`
}

// Run is the document of `run -o json`.
type Run struct {
	Version int      `json:"version"`
	Targets []Target `json:"targets"`
	// Error says why run stopped before any target's cycle (the config,
	// --target); targets is then empty, and the exit code is not 0.
	Error string `json:"error,omitempty"`
	// Problems are the config's problems, with their places, when the
	// config was refused; absent otherwise.
	Problems []Problem `json:"problems,omitempty"`
}

// Target is one target's cycle.
type Target struct {
	Target     string `json:"target"`
	Repository string `json:"repository"`
	Branch     string `json:"branch"`
	PushBranch string `json:"pushBranch,omitempty"`
	Commit     string `json:"commit,omitempty"`
	Pushed     bool   `json:"pushed"`
	Forced     bool   `json:"forced,omitempty"`
	Attempts   int    `json:"attempts,omitempty"`
	// Held is true when push.branch and its pull request were left as they
	// are because a policy failed (a registry blip must not drop that
	// policy's bumps from the pull request).
	Held     bool      `json:"held,omitempty"`
	Policies []Policy  `json:"policies"`
	Changes  []Change  `json:"changes"`
	Problems []Problem `json:"problems"`
	// Files counts the files the scan looked at; absent when the cycle
	// failed before it.
	Files *Files `json:"files,omitempty"`
	// PullRequest is what happened to the target's pull request, when it
	// has push.pullRequest and something to propose.
	PullRequest *pullrequest.Result `json:"pullRequest,omitempty"`
	// Error says why the target failed.
	Error string `json:"error,omitempty"`
}

// NewPlan renders a cycle report; applied says whether its edits were
// written.
func NewPlan(rep *cycle.Report, applied bool) Plan {
	out := Plan{Version: Version, Applied: applied}
	out.Policies, out.Changes, out.Problems = scan(rep)
	out.Files = files(rep)
	out.Markers = len(rep.Markers)
	out.Unreferenced = append([]string{}, rep.Unreferenced...)
	return out
}

// NewTarget renders a target's cycle; errText is the target's error, ""
// when it succeeded.
func NewTarget(res *cycle.TargetResult, errText string) Target {
	t := Target{Target: res.Target, Repository: res.Repository, Branch: res.Branch, PushBranch: res.PushBranch,
		Commit: res.Commit, Pushed: res.Pushed, Forced: res.Forced, Attempts: res.Attempts, Held: res.Held,
		PullRequest: res.PullRequest, Error: errText,
		Policies: []Policy{}, Changes: []Change{}, Problems: []Problem{}}
	if res.Report != nil {
		t.Policies, t.Changes, t.Problems = scan(res.Report)
		f := files(res.Report)
		t.Files = &f
	}
	return t
}

// files counts a report's files.
func files(rep *cycle.Report) Files {
	return Files{Scanned: rep.FilesScanned, Read: rep.FilesRead, Cached: rep.FilesCached, Changed: append([]string{}, rep.FilesChanged...)}
}

// scan renders a report's policies, changes and problems; failed policies
// are problems too, as in the text output.
func scan(rep *cycle.Report) ([]Policy, []Change, []Problem) {
	policies, changes, problems := []Policy{}, []Change{}, []Problem{}
	for _, p := range rep.Policies {
		s := p.Selection
		pj := Policy{Name: p.Name, Repository: p.Repository, Latest: p.Latest(), Digest: p.Digest,
			Tags: s.Seen, Excluded: s.Counts.Excluded, Filtered: s.Counts.Filtered, Skipped: s.Counts.Skipped, Invalid: s.Counts.Invalid,
			Candidates: s.Counts.Candidates, Warnings: s.Warnings}
		if p.Err != nil {
			pj.Error = p.Err.Error()
			problems = append(problems, Problem{Policy: p.Name, Message: p.Err.Error()})
		}
		for _, h := range p.HeldBack {
			hb := HeldBack{Tag: h.Tag, Digest: h.Digest, Gate: string(h.Gate), Detail: h.Detail}
			hb.Until = Time(h.Until)
			pj.HeldBack = append(pj.HeldBack, hb)
		}
		if h := p.Held; h != nil {
			pj.Held = &Hold{Reason: h.Reason}
			pj.Held.Until = Time(h.UntilTime())
		}
		policies = append(policies, pj)
	}
	for _, c := range rep.Changes {
		changes = append(changes, Change{File: c.File, Line: c.Line, Policy: c.Policy, Field: FieldName(c.Field), From: c.Old, To: c.New})
	}
	for _, p := range rep.Problems {
		problems = append(problems, Problem{File: p.File, Line: p.Line, Policy: p.Policy, Message: p.Error()})
	}
	return policies, changes, problems
}

// FieldName names a marker's field as the documents do: image, tag, name
// or digest.
func FieldName(f setters.Field) string {
	if f == setters.FieldImage {
		return "image"
	}
	return string(f)
}

// Time writes t as RFC 3339, in UTC, as the documents' times are; "" for
// the zero time, and for a time past the year 9999, which RFC 3339 cannot
// write (an image dated 9999-12-31 by a broken build, plus a minimum age).
func Time(t time.Time) string {
	if t.IsZero() || t.UTC().Year() > 9999 {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
