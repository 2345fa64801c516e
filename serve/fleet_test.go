package serve

import (
	"fmt"
	"time"
)

// fleetStatus is the status of a process that runs n targets, filled as a
// large fleet's is after a few hours: each target applies 40 policies and
// has its 10 last cycles (DefaultHistory), some of them with changes, a
// pull request or a webhook's trigger. Every fifth target's last cycle is
// partial (two policies whose registry answered 503, and a broken file);
// every eighth has failed three times in a row (a git fetch). It is shard 0
// of 2 and has one webhook. The figures of the status page's size in
// docs/benchmarks.md come from it.
func fleetStatus(n int) Status {
	now := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	st := Status{
		Version: 1, Started: now.Add(-6 * time.Hour), Now: now, Ready: true,
		Config: ConfigStatus{File: "/etc/imagebump/imagebump.yaml", Loaded: now.Add(-6 * time.Hour)},
		Shard:  &ShardStatus{Index: 0, Count: 2, TargetsConfigured: 2 * n},
		Webhooks: []WebhookStatus{{
			Name: "github", Path: "/hook/github", Auth: "hmac-sha256", Accepted: 312, Refused: 2,
			Last: &WebhookRequest{Time: now.Add(-3 * time.Minute), Status: 202, Result: hookTriggered, Kind: "github",
				Images: []string{"ghcr.io/acme/team-3/app-7:1.4.2"}, Targets: []string{"cluster-003"}},
		}},
	}
	for i := range n {
		st.Shard.Elsewhere = append(st.Shard.Elsewhere, ShardTarget{Name: fmt.Sprintf("cluster-%03d", n+i), Shard: 1})
	}
	for i := range n {
		name := fmt.Sprintf("cluster-%03d", i)
		t := TargetStatus{
			Name:       name,
			Repository: fmt.Sprintf("https://github.com/acme/fleet-%03d.git", i),
			Branch:     "main", PushBranch: "imagebump/" + name, Schedule: "5m",
			NextRun: at(time.Duration(30+i%240) * time.Second), NextReason: ReasonSchedule,
			LastSuccess: at(-time.Duration(2+i%5) * time.Minute),
			CyclesRun:   72, Markers: 52,
		}
		partial, failing := i%5 == 0, i%8 == 0
		for j := range 40 {
			p := PolicyStatus{
				Name:       fmt.Sprintf("team-%d:app-%d", j%6, j),
				Repository: fmt.Sprintf("ghcr.io/acme/team-%d/app-%d", j%6, j),
				Latest:     fmt.Sprintf("1.%d.%d", j, i%17),
				Digest:     fmt.Sprintf("sha256:%064x", i*1000+j),
				Seen:       140 + j, Excluded: 3, Filtered: 40, Skipped: 12, Candidates: 85 + j, Invalid: j % 3,
				Checked: now.Add(-2 * time.Minute),
			}
			if partial && j < 2 {
				p.Latest, p.Digest, p.Candidates = "", "", 0
				p.Error = fmt.Sprintf("listing tags of %s: GET https://ghcr.io/v2/acme/team-%d/app-%d/tags/list?n=1000: unexpected status code 503 Service Unavailable", p.Repository, j%6, j)
			}
			if j == 9 && i%7 == 0 {
				p.Held = &HoldStatus{Reason: "incident 4711: rollout paused by the on-call", Until: at(48 * time.Hour)}
			}
			t.Policies = append(t.Policies, p)
		}
		if i%6 == 0 {
			t.Unreferenced = []string{"team-5:legacy-batch", "team-2:canary"}
		}
		for k := range DefaultHistory {
			c := CycleStatus{
				Started:         now.Add(-time.Duration(k*5+2) * time.Minute),
				DurationSeconds: 0.4 + float64(k%4)/10,
				Reason:          ReasonSchedule, Result: ResultSuccess,
				Commit:    fmt.Sprintf("%040x", i*100+k),
				FilesRead: 0, FilesFromIndex: 412,
			}
			switch {
			case k%4 == 1:
				c.Reason = ReasonTrigger
				c.Triggers = []string{fmt.Sprintf("webhook github: ghcr.io/acme/team-%d/app-%d:1.%d.%d", k%6, k, k, i%17)}
				c.Pushed, c.FilesRead, c.FilesFromIndex = true, 2, 410
				for m := range 2 {
					c.Changes = append(c.Changes, ChangeStatus{
						File: fmt.Sprintf("clusters/%s/apps/app-%d/deployment.yaml", name, k+m), Line: 24 + m,
						Policy: fmt.Sprintf("team-%d:app-%d", k%6, k+m),
						Old:    fmt.Sprintf("ghcr.io/acme/team-%d/app-%d:1.%d.%d", k%6, k+m, k, i%17),
						New:    fmt.Sprintf("ghcr.io/acme/team-%d/app-%d:1.%d.%d", k%6, k+m, k, i%17+1),
					})
				}
				c.ChangesTotal = len(c.Changes)
				c.PullRequest = &PullRequestStatus{Provider: "github", Number: 1200 + i, URL: fmt.Sprintf("https://github.com/acme/fleet-%03d/pull/%d", i, 1200+i), Outcome: "updated"}
			case k == 0 && partial:
				c.Result = ResultPartial
				for _, p := range t.Policies[:2] {
					c.Problems = append(c.Problems, p.Error)
				}
				c.Problems = append(c.Problems, fmt.Sprintf("clusters/%s/apps/app-3/values.yaml:12: yaml: line 12: mapping values are not allowed in this context", name))
				c.ProblemsTotal = len(c.Problems)
			}
			if failing && k < 3 {
				c = CycleStatus{
					Started: c.Started, DurationSeconds: 120, Reason: ReasonRetry, Result: ResultError,
					Error: fmt.Sprintf("fetching https://github.com/acme/fleet-%03d.git: read tcp 10.0.3.17:51234->140.82.121.3:443: i/o timeout", i),
				}
			}
			t.Cycles = append(t.Cycles, c)
		}
		if failing {
			t.LastSuccess = at(-17 * time.Minute)
			t.FailingSince = at(-12 * time.Minute)
			t.ConsecutiveFailures = 3
			t.NextReason = ReasonRetry
		} else if partial {
			t.FailingSince = at(-2 * time.Minute)
			t.ConsecutiveFailures = 1
			t.LastSuccess = at(-7 * time.Minute)
		}
		if i%50 == 7 {
			t.NextRun, t.NextReason, t.RunningSince = nil, "", at(-20*time.Second)
		}
		st.Targets = append(st.Targets, t)
	}
	return st
}
