package tasks

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// DefaultLedger is the ledger bucket a Client uses without Config.Ledger:
// the CLI's default too, so `natscoord ledger ls` shows the same tasks.
const DefaultLedger = "natscoord_ledger"

// Config configures a Client. The zero value is valid: every field states
// its default.
type Config struct {
	// Ledger is the ledger's KV bucket, created when missing. Default
	// DefaultLedger ("natscoord_ledger").
	Ledger string
	// Replicas is the replication factor of what the client creates (the
	// ledger bucket, whose stream is also the event log, and the claims'
	// lease bucket).
	// Default 1; use 3 in a cluster.
	Replicas int
	// Retention keeps ended tasks this long, then the server removes
	// them (kvledger.KVStoreConfig.Retention); a task that another task
	// not yet ended needs is kept until that one ends, and its Retention
	// runs from then. Default 0: kept until removed (`natscoord ledger
	// purge`).
	Retention time.Duration
	// Actor is recorded on the client's admissions. Default "tasks".
	Actor kvledger.Actor
	// Clock is the client's and its worker's time: a submission's
	// admission time (from which Delay runs), a schedule's UpdatedAt, the
	// time a task's phase is judged at (Inspect, Counts), and the time
	// RunAt is compared with (worker.Config.Clock). kvlock.RealClock and
	// kvlock.ManualClock are two. Default the system clock. Liveness
	// never depends on it: the server judges leases.
	Clock clock.Clock

	// The worker's settings, used once a worker is added (AddWorker).

	// Concurrency bounds the handlers run at once. Default 8.
	Concurrency int
	// KindConcurrency bounds, per kind, the handlers run at once (within
	// Concurrency). Default: no bound.
	KindConcurrency map[string]int
	// GroupLimits bounds, per group (SubmitOpts.Group), the tasks of the
	// group that run at once across all workers of the ledger; every
	// worker should state the same limits (worker.Config.GroupLimits).
	// Default: no bound.
	GroupLimits map[string]int
	// RateLimits bounds, per kind or per group, the tasks that start in
	// any window of a period across all workers of the ledger: at most
	// N per Period (whole seconds, 1s to 24h), judged by the server
	// (worker.Config.RateLimits, worker.RateLimit; the precision and cost
	// in kvledger/worker's documentation, "Rate limits"). A task waiting
	// for its limit uses no attempt. Every worker should state the same
	// limits. Default: none.
	RateLimits []worker.RateLimit
	// FairKinds are the kinds whose ready tasks take turns by group
	// (SubmitOpts.Group): within one priority the worker starts each
	// group's next task in turn (round robin), so one tenant's backlog
	// does not hold back another's; tasks without a group form one
	// group. Each worker takes its own turns, so across workers groups
	// interleave but not strictly (worker.Config.FairKinds, which states
	// the cost). Default: none (priority, then the order tasks became
	// ready).
	FairKinds []string
	// MaxAttempts bounds the attempts of a task submitted without its
	// own: Submit stores it in the task's record, so every worker obeys
	// it and the record, Attempts and Task.MaxAttempts show it. Default
	// 3; 1 disables retries.
	MaxAttempts int
	// Backoff returns the pause before attempt n+1 after attempt n
	// failed (n >= 1; a negative pause is none). Default: exponential
	// from BackoffBase, doubling, capped at BackoffMax, each pause
	// jittered into [d/2, d] (worker.Config.Backoff).
	Backoff func(attempt int) time.Duration
	// BackoffBase and BackoffMax shape the default Backoff. Defaults 1s
	// and 1h; tests that retry may set BackoffBase to a millisecond.
	BackoffBase, BackoffMax time.Duration
	// Timeout bounds each attempt's handler of a task submitted without
	// its own (SubmitOpts.Timeout): Submit stores it in the task's
	// record, so every worker obeys it, and the client's worker applies
	// it to records that state none. When it runs out the handler's ctx
	// ends with cause ErrTimeout, and the attempt fails with that error
	// and is retried by the usual rule; the task is not run again before
	// the handler has returned. Default 0: no bound.
	Timeout time.Duration
	// MaxSnoozes bounds how often a handler may snooze one task (Snooze):
	// the next snooze fails it. Default 100 (worker.DefaultMaxSnoozes).
	MaxSnoozes int
	// Observer receives one call when a handler starts and one when its
	// attempt has been recorded: the one hook that logging, metrics and
	// tracing plug into. worker.SlogObserver logs each attempt,
	// worker.RecorderObserver records them for /metrics, the
	// kvledger/worker/otelworker module adapts OpenTelemetry; join
	// several with worker.Observers. Default: none.
	Observer worker.Observer
	// ClaimTTL is how long after a worker's last renewal its claims are
	// taken over by other workers when it dies. 1s to 24h; default 10s.
	ClaimTTL time.Duration
	// ClaimBucket is the lease bucket of the workers' claims; every
	// worker of a ledger must use the same one. Default
	// "natscoord_task_claims".
	ClaimBucket string
	// DrainTimeout is how long Close lets running handlers finish.
	// Default 30s; negative means do not wait.
	DrainTimeout time.Duration
	// Logger receives one line per attempt that did not complete (failed,
	// retried, given back, lost, cancelled, released by a drain) and
	// the worker's own faults (a claim or outcome write that failed).
	// Default: discard.
	Logger *slog.Logger
	// IgnoreSchedules keeps the client's worker off the schedules stored
	// in the ledger (Schedule). Default false: it admits the periods of
	// every stored schedule whose kind it has a worker for.
	IgnoreSchedules bool
}

func (c Config) withDefaults() (Config, error) {
	c.Ledger = cmp.Or(c.Ledger, DefaultLedger)
	c.Actor = cmp.Or(c.Actor, "tasks")
	c.MaxAttempts = cmp.Or(c.MaxAttempts, worker.DefaultMaxAttempts)
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
	if c.Retention < 0 {
		return c, fmt.Errorf("%w: negative Retention %v", ErrInvalidConfig, c.Retention)
	}
	return c, nil
}

// workerConfig is the runtime's configuration for this client.
func (c Config) workerConfig() worker.Config {
	return worker.Config{
		LeaseBucket:     c.ClaimBucket,
		LeaseReplicas:   c.Replicas,
		ClaimTTL:        c.ClaimTTL,
		Concurrency:     c.Concurrency,
		KindConcurrency: c.KindConcurrency,
		GroupLimits:     c.GroupLimits,
		RateLimits:      c.RateLimits,
		FairKinds:       c.FairKinds,
		MaxAttempts:     c.MaxAttempts,
		Backoff:         c.Backoff,
		BackoffBase:     c.BackoffBase,
		BackoffMax:      c.BackoffMax,
		DrainTimeout:    c.DrainTimeout,
		Logger:          c.Logger,
		Observer:        c.Observer,
		Timeout:         c.Timeout,
		MaxSnoozes:      c.MaxSnoozes,
		Clock:           c.Clock,

		IgnoreStoredSchedules: c.IgnoreSchedules,
	}
}
