// Package serve is imagebump's long-running mode: it runs every target's
// cycle (cycle.RunTarget) on the target's schedule and at once on a
// registry's push event (webhooks), and serves a status page, health,
// readiness, Prometheus metrics and a status document over HTTP.
// `imagebump serve` parses flags and calls it; everything else is here.
//
// # Workers
//
// Each target has a worker, a goroutine that runs the target's cycles one
// at a time, so that cycles of one target never overlap and a slow or
// failing target never holds up another. Cycles of different targets run
// at once up to Options.Concurrency (default 4); a cycle whose time has come
// while every slot is taken waits for one. Failing targets, and cycles slow
// for 10 s while there is room, run in a share of their own, one slot
// fewer (at least one), beside those. The working copy of each target
// stays in Options.Workdir between cycles, and the registry client (with
// its cached auth challenges and tokens) is shared by every cycle until the
// config is reloaded, so a cycle with nothing new costs the tag listings of
// the repositories its markers name and one fetch.
//
// # Schedules
//
// A target's `schedule:` is a cron expression, a descriptor (@hourly,
// @every 10m) or a duration (5m), parsed by config.ParseSchedule; a target
// without one runs every DefaultSchedule (5m).
//
//   - Jitter: a tick's cycle starts at the tick plus a random delay drawn
//     uniformly from [0, W), where W is a tenth of the gap between that tick
//     and the next, capped at Options.MaxJitter (default 1m): 30 s for 5m,
//     1 m for @hourly. Every process draws its own delays, so targets and
//     replicas that share a schedule spread over W instead of firing
//     together.
//   - Start: an interval (a duration or @every) runs its first cycle at
//     start, within W; a cron expression or descriptor waits for its next
//     time, so that windows such as "0 9-17 * * 1-5" hold.
//   - No overlap, no catch-up: a cycle serves every tick that passes while
//     it runs; a cycle longer than the interval skips ticks rather than
//     queueing them.
//   - Retries: after a failed cycle that a retry may fix (the target failed,
//     or a policy did, say its registry was down), the cycle runs again
//     after a backoff of Options.RetryBackoff (10 s) doubled with each
//     failure in a row up to Options.MaxRetryBackoff (10 m), the second half
//     of it drawn at random, unless the next tick comes first. A cycle whose
//     only problems are files (invalid YAML, unknown policies) waits for the
//     next tick: only a new commit fixes those, and it ends the row of
//     failures the backoff counts.
//   - Triggers: Server.Trigger runs a target's cycle Options.Debounce (2 s)
//     after the first trigger; further triggers meanwhile join that cycle,
//     and a trigger that comes while a cycle runs gets one more cycle right
//     after it.
//
// Everything timed (ticks, jitter, backoff, debounce, the grace period)
// goes through Options.Clock, so tests run schedules on a fake clock.
//
// # Stopping and reloading
//
// SIGTERM or SIGINT (or the end of Run's ctx) stops scheduling, waits up to
// Options.Grace (30 s) for running cycles, then cancels them. A cancelled
// cycle never leaves a half-pushed state: a Git remote updates a ref only
// after it has received the whole pack, so the push lands whole or not at
// all, and a pull request that the cycle did not get to is opened by the
// next cycle, which finds the branch already pushed. A second SIGTERM or
// SIGINT cancels the cycles and returns ErrInterrupted at once.
//
// SIGHUP reloads the config. A config that does not load, has no target,
// or whose schedules or registries are invalid is refused, logged and
// counted, and the running one stays. A good one replaces the targets: new
// ones start (an interval at once), removed ones stop after their running
// cycle, changed ones use the new settings from their next cycle.
//
// # Ownership and sharding
//
// Options.Shard and Options.Owns decide which targets this process runs.
// With Shard{Index: I, Count: N} it runs the targets whose name hashes to I
// (ShardOf: FNV-1a of the name, modulo N), so that N replicas of one
// config split the targets with no coordination; ParseShard reads
// `--shard I/N` and `--shard auto/N`, which takes I from a StatefulSet
// pod's ordinal. The status and the metrics show the shard, and webhook
// events for the targets of other shards are accepted and ignored.
//
// # Webhooks
//
// POST /hook/{name} serves the config's webhooks (config.Webhook). A
// request is authenticated (an HMAC-SHA256 signature of the body made with
// the secretFile, or the tokenFile as a bearer token, compared in constant
// time, the file read at each request) and its body read to at most
// MaxWebhookBody; a request that fails any check is refused with its
// status code and a log record before any work. The payload (Docker Hub,
// Harbor, Quay, GitHub's package events, the CNCF distribution envelope,
// or a generic {"repository", "tag"}) names images; each target of this
// process whose policies watch one of them gets Trigger, and so a cycle
// after the debounce.
//
// # HTTP
//
// / is the status page: the Status document rendered by html/template,
// with no script, as an index of a row per target (with every target's
// details too when there are at most 10) and a page per target at
// /targets/{name}. /healthz answers 200 while the process serves. /readyz
// answers 503 while stopping or while some target has failed for longer
// than Options.UnreadyAfter (1 h). /metrics serves the Prometheus metrics
// of a registry of its own (docs/serve.md lists them). /api/v1/status
// serves the Status document: per target its last cycles, its policies
// with the latest tag and why, and its next run; the shard; the webhooks.
// With ?target=NAME it holds that one target.
package serve
