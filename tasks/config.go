package tasks

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"

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
	// own. Default 3; 1 disables retries.
	MaxAttempts int
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
	// Logger receives one line per failed attempt, lost claim and drain.
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
		FairKinds:       c.FairKinds,
		MaxAttempts:     c.MaxAttempts,
		DrainTimeout:    c.DrainTimeout,
		Logger:          c.Logger,

		IgnoreStoredSchedules: c.IgnoreSchedules,
	}
}
