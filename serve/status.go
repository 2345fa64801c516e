package serve

import (
	"errors"
	"time"

	"github.com/imagebump/imagebump/cycle"
)

// Limits on what the status keeps, so that its memory stays flat however
// long the process runs and however broken a repository is.
const (
	// DefaultHistory is how many cycles the status keeps per target.
	DefaultHistory = 10
	// maxListed caps the problems and changes kept per cycle; the totals
	// are kept whole.
	maxListed = 50
)

// Results of a cycle, as the status and the metrics name them.
const (
	// ResultSuccess: every policy resolved, every file handled, and the
	// push and pull request (when there was something to do) went through.
	ResultSuccess = "success"
	// ResultPartial: the cycle went through, but some policy or file
	// failed (it is listed); the others were applied.
	ResultPartial = "partial"
	// ResultError: the target failed (clone, fetch, push, pull request).
	ResultError = "error"
	// ResultAbandoned: the cycle was cancelled at shutdown; the remote
	// holds either the whole push or none of it.
	ResultAbandoned = "abandoned"
)

// Status is the document of GET /api/v1/status: the process, its config,
// and every target it owns.
type Status struct {
	// Version is the document's format version, 1.
	Version int `json:"version"`
	// Started is when the process started serving.
	Started time.Time `json:"started"`
	// Now is when the document was made.
	Now time.Time `json:"now"`
	// Ready is what /readyz answers.
	Ready bool `json:"ready"`
	// NotReady says why Ready is false.
	NotReady []string `json:"notReady,omitempty"`
	// Stopping is true once a shutdown began.
	Stopping bool `json:"stopping,omitempty"`
	// Config is the config in force and the last reload.
	Config ConfigStatus `json:"config"`
	// Shard is this process's share of the config's targets, when
	// targets are sharded over replicas.
	Shard *ShardStatus `json:"shard,omitempty"`
	// Targets are the targets this process owns, by name.
	Targets []TargetStatus `json:"targets"`
	// Webhooks are the webhook endpoints of the config in force, with the
	// requests they got.
	Webhooks []WebhookStatus `json:"webhooks,omitempty"`
}

// ShardStatus is this replica's share of the targets (--shard I/N).
type ShardStatus struct {
	// Index is this replica's shard, in [0, Count).
	Index int `json:"index"`
	Count int `json:"count"`
	// TargetsConfigured counts the targets of the config, this shard's
	// and the others'.
	TargetsConfigured int `json:"targetsConfigured"`
	// Elsewhere are the config's targets that other shards own, by name.
	Elsewhere []ShardTarget `json:"elsewhere,omitempty"`
}

// ShardTarget is a target of another shard.
type ShardTarget struct {
	Name  string `json:"name"`
	Shard int    `json:"shard"`
}

// WebhookStatus is one webhook endpoint and what it received since the
// process started.
type WebhookStatus struct {
	Name string `json:"name"`
	// Path is where registries POST: /hook/NAME.
	Path string `json:"path"`
	// Auth is how requests authenticate: hmac-sha256 (secretFile), bearer
	// (tokenFile) or bearer-or-query (tokenFile with tokenInQuery).
	Auth string `json:"auth"`
	// Accepted and Refused count the requests since the process started.
	Accepted int `json:"accepted"`
	Refused  int `json:"refused"`
	// Last is the last request, accepted or refused.
	Last *WebhookRequest `json:"last,omitempty"`
}

// WebhookRequest is one request to a webhook.
type WebhookRequest struct {
	Time time.Time `json:"time"`
	// Status is the HTTP status answered.
	Status int `json:"status"`
	// Result is what became of it, as the metric
	// imagebump_webhooks_total names it.
	Result string `json:"result"`
	// Kind is the payload's format: dockerhub, harbor, quay, github,
	// distribution or generic.
	Kind string `json:"kind,omitempty"`
	// Images are the images it named (at most 10), and Targets those it
	// triggered.
	Images  []string `json:"images,omitempty"`
	Targets []string `json:"targets,omitempty"`
	// Error says why it was refused.
	Error string `json:"error,omitempty"`
}

// ConfigStatus describes the config in force.
type ConfigStatus struct {
	// File is the config file (or Flux objects' path), made absolute.
	File string `json:"file"`
	// Loaded is when the config in force was loaded.
	Loaded time.Time `json:"loaded"`
	// LastReload is the last reload (SIGHUP), if any.
	LastReload *ReloadStatus `json:"lastReload,omitempty"`
}

// ReloadStatus is one config reload.
type ReloadStatus struct {
	Time time.Time `json:"time"`
	// Result is "success" or "failure".
	Result string `json:"result"`
	// Error says why a reload was refused.
	Error string `json:"error,omitempty"`
}

// TargetStatus is one target: where it is, when it runs, and its last
// cycles.
type TargetStatus struct {
	Name string `json:"name"`
	// Removed is set for a target a reload removed whose last cycle
	// still runs: it is shown until that cycle ends, with no next run.
	Removed bool `json:"removed,omitempty"`
	// Repository is the Git URL without credentials.
	Repository string `json:"repository"`
	Branch     string `json:"branch,omitempty"`
	PushBranch string `json:"pushBranch,omitempty"`
	// Schedule is the schedule as written, or DefaultSchedule.
	Schedule string `json:"schedule"`
	// NextRun is when the next cycle starts (with its jitter), and
	// NextReason why: schedule, start, retry or trigger. Zero while a
	// cycle runs.
	NextRun    *time.Time `json:"nextRun,omitempty"`
	NextReason string     `json:"nextReason,omitempty"`
	// RunningSince is set while a cycle runs.
	RunningSince *time.Time `json:"runningSince,omitempty"`
	// LastSuccess is the end of the last successful cycle.
	LastSuccess *time.Time `json:"lastSuccess,omitempty"`
	// FailingSince is the end of the first failed cycle after the last
	// success; /readyz fails once it is older than the configured limit.
	FailingSince *time.Time `json:"failingSince,omitempty"`
	// ConsecutiveFailures counts the failed cycles since the last success.
	ConsecutiveFailures int `json:"consecutiveFailures"`
	// CyclesRun counts every cycle since the process started.
	CyclesRun int `json:"cyclesRun"`
	// Markers counts the markers the last scan found; zero usually means
	// git.paths misses the manifests.
	Markers int `json:"markers"`
	// Unreferenced lists the policies the target applies but no marker
	// names (their registries are not asked).
	Unreferenced []string `json:"unreferenced,omitempty"`
	// Policies are the policies of the last cycle that scanned, with the
	// latest tag and why.
	Policies []PolicyStatus `json:"policies"`
	// Cycles are the last cycles, latest first.
	Cycles []CycleStatus `json:"cycles"`
}

// PolicyStatus is what one policy picked in the last scan, and why.
type PolicyStatus struct {
	Name       string `json:"name"`
	Repository string `json:"repository"`
	// Latest is the tag picked, empty when the policy failed.
	Latest string `json:"latest,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Seen counts the tags the registry listed; Excluded, Filtered and
	// Skipped those the exclusions, the filter pattern and the policy kind
	// dropped; Candidates those that competed.
	Seen       int `json:"seen"`
	Excluded   int `json:"excluded"`
	Filtered   int `json:"filtered"`
	Skipped    int `json:"skipped"`
	Candidates int `json:"candidates"`
	// Invalid counts the tags that are not valid OCI tags, never
	// candidates.
	Invalid int `json:"invalid"`
	// Held is the policy's hold when it is active: Latest is reported,
	// and the markers stay where they are.
	Held *HoldStatus `json:"held,omitempty"`
	// Error says why the policy has no result.
	Error string `json:"error,omitempty"`
	// Checked is when the scan ran.
	Checked time.Time `json:"checked"`
}

// HoldStatus is an active hold of a policy.
type HoldStatus struct {
	Reason string `json:"reason"`
	// Until is when the hold ends; absent, it holds until released.
	Until *time.Time `json:"until,omitempty"`
}

// CycleStatus is one cycle of a target.
type CycleStatus struct {
	Started time.Time `json:"started"`
	// DurationSeconds is how long the cycle took.
	DurationSeconds float64 `json:"durationSeconds"`
	// Reason is why it ran: start, schedule, retry or trigger; Triggers
	// lists the different reasons given to Trigger that it served (the
	// first 10), TriggersTotal counts every trigger it served.
	Reason        string   `json:"reason"`
	Triggers      []string `json:"triggers,omitempty"`
	TriggersTotal int      `json:"triggersTotal,omitempty"`
	// Result is success, partial, error or abandoned.
	Result string `json:"result"`
	// Commit is the commit pushed, or the head that already held the
	// edits.
	Commit string `json:"commit,omitempty"`
	Pushed bool   `json:"pushed"`
	Forced bool   `json:"forced,omitempty"`
	// Held is true when push.branch (and its pull request, if any) was
	// left as it is because a policy failed.
	Held bool `json:"held,omitempty"`
	// Changes lists the fields rewritten (at most 50; ChangesTotal counts
	// them all).
	Changes      []ChangeStatus `json:"changes,omitempty"`
	ChangesTotal int            `json:"changesTotal"`
	// FilesRead and FilesFromIndex count the YAML files the scan read,
	// and those it served from the marker index without reading them.
	FilesRead      int `json:"filesRead"`
	FilesFromIndex int `json:"filesFromIndex"`
	// PullRequest is what happened to the pull request.
	PullRequest *PullRequestStatus `json:"pullRequest,omitempty"`
	// Error says why the target failed.
	Error string `json:"error,omitempty"`
	// Problems are the failed policies and files (at most 50;
	// ProblemsTotal counts them all).
	Problems      []string `json:"problems,omitempty"`
	ProblemsTotal int      `json:"problemsTotal"`
}

// ChangeStatus is one rewritten field.
type ChangeStatus struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Policy string `json:"policy"`
	Old    string `json:"old"`
	New    string `json:"new"`
}

// PullRequestStatus is the target's pull request after a cycle.
type PullRequestStatus struct {
	Provider string `json:"provider"`
	Number   int    `json:"number,omitempty"`
	URL      string `json:"url,omitempty"`
	// Outcome is opened, updated, unchanged, skipped or closed.
	Outcome string `json:"outcome"`
}

// outcome classifies a finished cycle.
type outcome struct {
	result string
	// retry says a retry soon may help: the target failed, or a policy
	// did (a registry blip); a broken file alone waits for the next tick.
	retry bool
}

func (o outcome) failed() bool { return o.result == ResultError || o.result == ResultPartial }

func classify(res *cycle.TargetResult, err error, abandoned bool) outcome {
	switch {
	case abandoned:
		return outcome{result: ResultAbandoned}
	case err != nil:
		return outcome{result: ResultError, retry: true}
	case res != nil && res.Failed():
		return outcome{result: ResultPartial, retry: res.Report.FailedPolicies() > 0}
	}
	return outcome{result: ResultSuccess}
}

// cycleStatus copies what the status keeps of a cycle.
func cycleStatus(started time.Time, reason string, triggers []string, o outcome, res *cycle.TargetResult, err error) CycleStatus {
	c := CycleStatus{Started: started, Reason: reason, Triggers: triggers, Result: o.result}
	if err != nil {
		var te *cycle.TargetError
		if errors.As(err, &te) {
			err = te.Err // the status is the target's: named already
		}
		c.Error = err.Error()
	}
	if res == nil {
		return c
	}
	c.DurationSeconds = res.Duration.Seconds()
	c.Commit, c.Pushed, c.Forced, c.Held = res.Commit, res.Pushed, res.Forced, res.Held
	if pr := res.PullRequest; pr != nil {
		c.PullRequest = &PullRequestStatus{Provider: pr.Provider, Number: pr.Number, URL: pr.URL, Outcome: string(pr.Outcome)}
	}
	if rep := res.Report; rep != nil {
		c.ChangesTotal = len(rep.Changes)
		c.FilesRead, c.FilesFromIndex = rep.FilesRead, rep.FilesCached
		for _, ch := range rep.Changes[:min(len(rep.Changes), maxListed)] {
			c.Changes = append(c.Changes, ChangeStatus{File: ch.File, Line: ch.Line, Policy: ch.Policy, Old: ch.Old, New: ch.New})
		}
		for _, p := range rep.Policies {
			if p.Err != nil {
				c.ProblemsTotal++
				if len(c.Problems) < maxListed {
					c.Problems = append(c.Problems, p.Err.Error())
				}
			}
		}
		for _, p := range rep.Problems {
			c.ProblemsTotal++
			if len(c.Problems) < maxListed {
				c.Problems = append(c.Problems, p.Error())
			}
		}
	}
	return c
}

// policyStatuses copies the per-policy picks of a scan.
func policyStatuses(rep *cycle.Report, checked time.Time) []PolicyStatus {
	out := make([]PolicyStatus, 0, len(rep.Policies))
	for _, p := range rep.Policies {
		s := PolicyStatus{
			Name:       p.Name,
			Repository: p.Repository,
			Latest:     p.Latest(),
			Digest:     p.Digest,
			Seen:       p.Selection.Seen,
			Excluded:   p.Selection.Counts.Excluded,
			Filtered:   p.Selection.Counts.Filtered,
			Skipped:    p.Selection.Counts.Skipped,
			Candidates: p.Selection.Counts.Candidates,
			Invalid:    p.Selection.Counts.Invalid,
			Checked:    checked,
		}
		if p.Held != nil {
			s.Held = &HoldStatus{Reason: p.Held.Reason}
			if u := p.Held.UntilTime(); !u.IsZero() {
				s.Held.Until = &u
			}
		}
		if p.Err != nil {
			s.Error = p.Err.Error()
		}
		out = append(out, s)
	}
	return out
}
