package serve

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/imagebump/imagebump/cycle"
)

// metrics are serve's Prometheus metrics, on a registry of their own (never
// the global one, so that two Servers in one process do not collide).
// docs/serve.md lists each one; keep it in step.
type metrics struct {
	reg *prometheus.Registry
	own []prometheus.Collector // every imagebump_ metric, as registered

	cycles       *prometheus.CounterVec   // target, result
	duration     *prometheus.HistogramVec // target, result
	running      prometheus.Gauge
	lastSuccess  *prometheus.GaugeVec   // target
	failing      *prometheus.GaugeVec   // target
	requests     *prometheus.CounterVec // host, code
	throttled    *prometheus.CounterVec // host
	waits        *prometheus.CounterVec // host
	waitSeconds  *prometheus.CounterVec // host
	tagsSeen     *prometheus.GaugeVec   // repository
	files        *prometheus.CounterVec // target, source
	bumps        *prometheus.CounterVec // policy
	pushes       *prometheus.CounterVec // target
	pullRequests *prometheus.CounterVec // target, outcome
	reloads      *prometheus.CounterVec // result
	reloadTime   prometheus.Gauge
	targets      prometheus.Gauge
	// Webhooks and sharding.
	webhooks          *prometheus.CounterVec // hook, result
	webhookImages     *prometheus.CounterVec // hook, result
	targetsConfigured prometheus.Gauge
	shardInfo         *prometheus.GaugeVec // index, count

	mu      sync.Mutex
	repos   map[string]bool // the repositories with a tags_seen series
	watched map[string]bool // the repositories of the config in force
}

// durationBuckets span a no-op cycle on a small repository (tens of
// milliseconds) to a first clone of a big one behind a slow registry.
var durationBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

func newMetrics() *metrics {
	const ns = "imagebump"
	m := &metrics{
		reg:   prometheus.NewRegistry(),
		repos: map[string]bool{},
		cycles: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "cycles_total",
			Help: "Cycles run, by target and result (success, partial, error, abandoned)."}, []string{"target", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "cycle_duration_seconds",
			Help: "Duration of cycles, by target and result.", Buckets: durationBuckets}, []string{"target", "result"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "cycles_running",
			Help: "Cycles running now."}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "last_success_timestamp_seconds",
			Help: "End of the last successful cycle of a target, as a Unix time."}, []string{"target"}),
		failing: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "target_failing",
			Help: "1 while the target's last finished cycle failed or had problems (result error or partial), else 0; 0 before its first cycle."}, []string{"target"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "registry_requests_total",
			Help: "HTTP requests to registries (and their token services), by host and status code; code is \"error\" when no response came."}, []string{"host", "code"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "registry_throttled_total",
			Help: "HTTP 429 Too Many Requests answers from registries, by host."}, []string{"host"}),
		waits: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "registry_rate_limit_waits_total",
			Help: "Requests that waited for a rate limit (registries[].rateLimit or a Retry-After), by host."}, []string{"host"}),
		waitSeconds: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "registry_rate_limit_wait_seconds_total",
			Help: "Time requests spent waiting for a rate limit, by host."}, []string{"host"}),
		tagsSeen: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "tags_seen",
			Help: "Tags a repository listed at its last scan."}, []string{"repository"}),
		files: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "files_scanned_total",
			Help: "YAML files the cycles looked at, by target and source: read (their bytes were read, by every attempt of a cycle) or index (served from the marker index)."}, []string{"target", "source"}),
		bumps: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "bumps_total",
			Help: "Marked fields rewritten in pushed commits, by policy."}, []string{"policy"}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "pushes_total",
			Help: "Commits pushed, by target."}, []string{"target"}),
		pullRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "pull_requests_total",
			Help: "Pull request outcomes (opened, updated, unchanged, skipped, closed), by target."}, []string{"target", "outcome"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "config_reloads_total",
			Help: "Config reloads, by result (success, failure)."}, []string{"result"}),
		reloadTime: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "config_last_load_timestamp_seconds",
			Help: "When the config in force was loaded (at start or by a reload), as a Unix time."}),
		targets: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "targets",
			Help: "Targets this process owns."}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "webhooks_total",
			Help: "Webhook requests, by hook and result (triggered, ignored, not_owned, skipped, ping; refused: unauthorized, too_large, bad_request, method_not_allowed, not_found, error, stopping). hook is empty for a path no webhook has."}, []string{"hook", "result"}),
		webhookImages: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "webhook_images_total",
			Help: "Images named by accepted webhook events, by hook and result: triggered (a target of this process watches it), not_owned (only targets of other shards do), ignored (no policy watches it)."}, []string{"hook", "result"}),
		targetsConfigured: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "targets_configured",
			Help: "Targets in the config in force, owned by this process or by other shards."}),
		shardInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "shard_info",
			Help: "1, labelled with this process's shard index and the shard count (0 and 1 when not sharded)."}, []string{"index", "count"}),
	}
	m.own = []prometheus.Collector{
		m.cycles, m.duration, m.running, m.lastSuccess, m.failing, m.requests, m.throttled, m.waits, m.waitSeconds,
		m.tagsSeen, m.files, m.bumps, m.pushes, m.pullRequests, m.reloads, m.reloadTime, m.targets,
		m.webhooks, m.webhookImages, m.targetsConfigured, m.shardInfo,
	}
	m.reg.MustRegister(m.own...)
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	// Both results exist from the start, so that a rate() over them works
	// before the first reload.
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("failure")
	return m
}

// shard records this process's shard.
func (m *metrics) shard(sh Shard) {
	m.shardInfo.WithLabelValues(strconv.Itoa(sh.Index), strconv.Itoa(max(sh.Count, 1))).Set(1)
}

// cycle records a finished cycle of target.
func (m *metrics) cycle(target string, o outcome, res *cycle.TargetResult, end time.Time) {
	m.cycles.WithLabelValues(target, o.result).Inc()
	if res == nil {
		return
	}
	m.duration.WithLabelValues(target, o.result).Observe(res.Duration.Seconds())
	if o.result == ResultSuccess {
		m.lastSuccess.WithLabelValues(target).Set(float64(end.UnixNano()) / 1e9)
	}
	if rep := res.Report; rep != nil {
		m.files.WithLabelValues(target, "read").Add(float64(rep.FilesRead + res.RedoneReads))
		m.files.WithLabelValues(target, "index").Add(float64(rep.FilesCached))
		for _, p := range rep.Policies {
			if p.Err == nil || p.Selection.Seen > 0 {
				m.setTagsSeen(p.Repository, p.Selection.Seen)
			}
		}
		if res.Pushed {
			for _, c := range rep.Changes {
				m.bumps.WithLabelValues(c.Policy).Inc()
			}
		}
	}
	if res.Pushed {
		m.pushes.WithLabelValues(target).Inc()
	}
	if pr := res.PullRequest; pr != nil {
		m.pullRequests.WithLabelValues(target, string(pr.Outcome)).Inc()
	}
}

// setFailing sets a target's failing gauge from its worker's state: when
// the target is added (0 unless its history says it fails, for a target
// added back), so that an alert on it covers a target that has never
// finished a cycle, and after each cycle.
func (m *metrics) setFailing(target string, failing bool) {
	v := 0.0
	if failing {
		v = 1
	}
	m.failing.WithLabelValues(target).Set(v)
}

// forgetTarget drops a removed target's series.
func (m *metrics) forgetTarget(target string) {
	labels := prometheus.Labels{"target": target}
	m.cycles.DeletePartialMatch(labels)
	m.duration.DeletePartialMatch(labels)
	m.lastSuccess.DeletePartialMatch(labels)
	m.failing.DeletePartialMatch(labels)
	m.pushes.DeletePartialMatch(labels)
	m.files.DeletePartialMatch(labels)
	m.pullRequests.DeletePartialMatch(labels)
}

// keepRepositories drops the tags_seen series of repositories that no
// policy of the config in force watches, and keeps them from coming back
// (a removed target's last cycle may still be running).
func (m *metrics) keepRepositories(keep map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.watched = keep
	for r := range m.repos {
		if !keep[r] {
			m.tagsSeen.DeleteLabelValues(r)
			delete(m.repos, r)
		}
	}
}

// setTagsSeen sets the tags_seen series of a repository.
func (m *metrics) setTagsSeen(repository string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.watched != nil && !m.watched[repository] {
		return
	}
	m.repos[repository] = true
	m.tagsSeen.WithLabelValues(repository).Set(float64(n))
}

// rateLimitWait counts a request that waited d for host's rate limit. The
// registry client calls it through its wait hook (see registryOptions).
func (m *metrics) rateLimitWait(host string, d time.Duration) {
	m.waits.WithLabelValues(host).Inc()
	m.waitSeconds.WithLabelValues(host).Add(d.Seconds())
}

// request counts one registry request by host and status code (registry's
// OnRequest hook).
func (m *metrics) request(host string, status int, err error) {
	if err != nil {
		m.requests.WithLabelValues(host, "error").Inc()
		return
	}
	m.requests.WithLabelValues(host, strconv.Itoa(status)).Inc()
	if status == http.StatusTooManyRequests {
		m.throttled.WithLabelValues(host).Inc()
	}
}
