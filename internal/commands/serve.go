package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/serve"
)

// ServeOptions are the inputs of `imagebump serve`.
type ServeOptions struct {
	global *globalOptions
	// Listen is the HTTP address of the endpoints.
	Listen string
	// HealthListen is a second address for /healthz and /readyz alone;
	// empty: none.
	HealthListen string
	// Workdir keeps one working copy per target between cycles; empty
	// means defaultServeWorkdir.
	Workdir string
	// Grace is how long a stop waits for running cycles.
	Grace time.Duration
	// UnreadyAfter is how long a target may fail before /readyz fails; 0
	// means never.
	UnreadyAfter time.Duration
	// Concurrency bounds the cycles running at once.
	Concurrency int
	// Shard is this replica's share of the targets, from --shard; the
	// zero Shard runs every target.
	Shard serve.Shard

	shardSpec string // --shard as given
}

// hostname is the name auto/N takes the shard's ordinal from: $HOSTNAME
// (a pod's name in Kubernetes), else the system's host name.
func hostname() string {
	if h := os.Getenv("HOSTNAME"); h != "" {
		return h
	}
	h, _ := os.Hostname()
	return h
}

// NewCmdServe builds `imagebump serve`.
func NewCmdServe(g *globalOptions, runF func(context.Context, *ServeOptions) error) *cobra.Command {
	o := &ServeOptions{global: g}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run every target's cycle on its schedule; serve health, metrics and status over HTTP",
		Long: `Run as a long-lived process: each target's cycle runs on the target's
schedule (cron, @every or a duration; 5m when none is set), with jitter, one
cycle per target at a time, failed cycles retried with backoff before the next
tick. Working copies stay in --workdir between cycles, so a cycle with nothing
new costs the tag listings and one fetch.

SIGTERM or SIGINT stops: no new cycle starts, running cycles get --grace to
finish and are then cancelled (a push lands whole or not at all); exit 0. A
second signal exits at once (exit 1). SIGHUP reloads the config; a bad one is
refused and the running one kept.

HTTP on --listen: the status page (/, a row per target, and /targets/NAME
for one) and its JSON twin (/api/v1/status, ?target=NAME for one),
/healthz, /readyz, /metrics (Prometheus), and POST /hook/NAME for the
registry webhooks of the config's webhooks: key, which scan the pushed
images' targets at once. --health-listen serves /healthz and /readyz
again on an address of their own, for the probes.

--shard I/N spreads the targets over N replicas with no coordination: this
one runs the targets whose name hashes to I. --shard auto/N takes I from the
ordinal that ends the host name, as a StatefulSet names its pods
(imagebump-2 is shard 2).

Logs are JSON unless stderr is a terminal or --log-format is given.
docs/serve.md has the details.`,
		Example: `  imagebump serve -c /etc/imagebump/imagebump.yaml --workdir /var/lib/imagebump
  imagebump serve --listen 127.0.0.1:9090 --grace 1m
  imagebump serve --shard auto/3    # in a StatefulSet of 3 replicas`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Grace < 0 || o.UnreadyAfter < 0 {
				return usageError(errors.New("--grace and --unready-after must not be negative"))
			}
			if o.HealthListen != "" && serve.SamePort(o.HealthListen, o.Listen) {
				return usageError(fmt.Errorf("--health-listen %s: want another port than --listen %s's", o.HealthListen, o.Listen))
			}
			if o.Concurrency < 1 {
				return usageError(fmt.Errorf("--concurrency %d: want 1 or more", o.Concurrency))
			}
			if o.shardSpec != "" {
				sh, err := serve.ParseShard(o.shardSpec, hostname())
				if err != nil {
					return usageError(fmt.Errorf("--shard: %w", err))
				}
				o.Shard = sh
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runServe(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", ":8080", "HTTP address of the status page (/ and /targets/NAME), /healthz, /readyz, /metrics, /api/v1/status and /hook/NAME")
	f.StringVar(&o.HealthListen, "health-listen", "", "a second HTTP address for /healthz and /readyz alone, with connections of its own, for the liveness and readiness probes: clients holding --listen's connections cannot hold them (default: none)")
	f.StringVar(&o.Workdir, "workdir", "", "folder that keeps a working copy per target between cycles (default: imagebump/serve in the user's cache folder: $XDG_CACHE_HOME or ~/.cache on Linux, ~/Library/Caches on macOS)")
	f.DurationVar(&o.Grace, "grace", serve.DefaultGrace, "on SIGTERM or SIGINT, how long running cycles may take to finish before they are cancelled")
	f.DurationVar(&o.UnreadyAfter, "unready-after", serve.DefaultUnreadyAfter, "/readyz fails once a target has failed for longer than this (0: never)")
	f.IntVar(&o.Concurrency, "concurrency", serve.DefaultConcurrency, "cycles (of different targets) running at once, failing targets and cycles slow for 10s or more aside (docs/serve.md)")
	f.StringVar(&o.shardSpec, "shard", "", "run only the targets whose name hashes to shard I of N replicas: I/N, or auto/N to take I from the ordinal ending $HOSTNAME (a StatefulSet pod's name)")
	return cmd
}

func runServe(ctx context.Context, o *ServeOptions) error {
	// Signals first of all: until it is caught, SIGHUP kills the process,
	// and a systemctl reload can come while the config still loads (from
	// a slow mount or a pipe); a SIGTERM then would be lost, as serve runs
	// on a context main's cancel does not reach. One that comes before the
	// server runs is answered once it runs: SIGHUP by a reload, SIGTERM or
	// SIGINT by a stop. main cancels ctx on the first SIGTERM or SIGINT,
	// which serve gets on its own channel too and answers with the grace
	// period: serve must not see it twice.
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(signals)
	// At the start and at each reload, a file the config names that is
	// not here (a Secret not mounted yet, a typo) is logged at once,
	// rather than found by the first cycle or webhook delivery that
	// reads it; so is a target's policies entry that matches no policy,
	// whose cycles would all succeed, bumping nothing through it.
	load := func() (*config.Config, error) {
		cfg, err := loadConfig(o.global)
		if err == nil {
			warnMissingFiles(cfg, o.global.logger)
			for _, p := range unmatchedPolicies(cfg) {
				o.global.logger.Warn(p.Message, "config", fileLine(p.File, p.Line))
			}
		}
		return cfg, err
	}
	cfg, err := load()
	if err != nil {
		return usageError(err)
	}
	workdir := o.Workdir
	if workdir == "" {
		if workdir, err = defaultServeWorkdir(); err != nil {
			return usageError(err)
		}
	}
	if err := os.MkdirAll(workdir, 0o755); err != nil {
		return usageError(fmt.Errorf("--workdir: %w", err))
	}
	grace, unready := o.Grace, o.UnreadyAfter
	if grace == 0 {
		grace = -1 // the library's "cancel at once"
	}
	if unready == 0 {
		unready = -1 // the library's "never"
	}
	s, err := serve.New(serve.Options{
		Config: cfg,
		// A reload reads what the start read: imagebump.yaml and the Flux
		// objects it, --flux or -c DIR name.
		Load:         load,
		Workdir:      workdir,
		Listen:       o.Listen,
		HealthListen: o.HealthListen,
		Signals:      signals,
		Grace:        grace,
		UnreadyAfter: unready,
		Concurrency:  o.Concurrency,
		Shard:        o.Shard,
		Logger:       o.global.logger,
	})
	if err != nil {
		return usageError(err)
	}
	sctx, stop := outputClosedContext(ctx)
	defer stop()
	if err := s.Run(sctx); err != nil {
		return failure(err)
	}
	return nil
}

// outputClosedContext returns the context serve runs on: ctx's
// cancellation reaches it only when stdout or stderr was closed
// (outputWriter), which serve learns no other way; a signal it answers on
// its own channel (runServe). stop releases it.
func outputClosedContext(ctx context.Context) (sctx context.Context, stop func()) {
	sctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	unwatch := context.AfterFunc(ctx, func() {
		if outputClosed(ctx) {
			cancel(errOutputClosed)
		}
	})
	return sctx, func() {
		unwatch()
		cancel(nil)
	}
}

// defaultServeWorkdir is the working copies' folder when --workdir is not
// given: imagebump/serve in the user's cache folder, kept across restarts
// so that a restart costs a fetch, not a clone.
func defaultServeWorkdir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no --workdir and no cache folder to default to (%w): pass --workdir DIR", err)
	}
	return filepath.Join(dir, "imagebump", "serve"), nil
}

// warnMissingFiles logs a warning for each file cfg names that does not
// exist: each cycle or webhook delivery that reads it fails until it does.
// A registry's caFile is left out: the registry client reads it when it is
// made, and warns of one it cannot use itself, with its host.
func warnMissingFiles(cfg *config.Config, log *slog.Logger) {
	for _, f := range missingFiles(cfg) {
		if !strings.HasSuffix(f.Key, ".caFile") {
			log.Warn("a file the config names does not exist: what reads it fails until it does", "key", f.Key, "file", f.Path, "config", fileLine(cfg.File, f.Line))
		}
	}
}
