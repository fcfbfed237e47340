package worker

import (
	"cmp"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
	"unicode/utf8"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// Defaults of Config.
const (
	DefaultLeaseBucket = "natscoord_task_claims"
	DefaultClaimTTL    = 10 * time.Second
	DefaultConcurrency = 8
	DefaultMaxAttempts = kvledger.DefaultMaxAttempts
	// DefaultClaimAhead caps the default ClaimAhead (which is
	// Concurrency); MaxClaimAhead bounds any ClaimAhead.
	DefaultClaimAhead   = 64
	MaxClaimAhead       = 4096
	DefaultDrainTimeout = 30 * time.Second
	DefaultOpTimeout    = 5 * time.Second
	DefaultBackoffBase  = time.Second
	DefaultBackoffMax   = time.Hour
	// DefaultMaxSnoozes bounds the snoozes of a task (Snooze).
	DefaultMaxSnoozes = 100
	// DefaultMaxResultBytes bounds a handler's result (Task.SetResult).
	DefaultMaxResultBytes = 64 << 10
)

// Config configures a Worker. The zero value is valid: every field states
// its default.
type Config struct {
	// Owner names this worker in claims (TaskState.Owner). Default: the
	// lease manager's holder id ("<host>:<pid>:<nuid>").
	Owner kvledger.OwnerID
	// Actor is recorded on every write. Default: Owner.
	Actor kvledger.Actor
	// Leases is the lease manager whose leases go with claims. Default: a
	// manager the worker creates on LeaseBucket (and closes on Close).
	// Workers that share a ledger must use the same lease bucket.
	Leases *kvlease.Manager
	// LeaseBucket is the bucket of the worker's own lease manager (when
	// Leases is nil). Default DefaultLeaseBucket; LeaseReplicas sets its
	// replication when it is created (default 1).
	LeaseBucket   string
	LeaseReplicas int
	// ClaimTTL is the TTL of the worker's lease, which all its claims
	// name: a worker that dies loses its claims this long after its
	// last renewal, and other workers take them over. MinTTL (1s) to
	// MaxTTL (24h); default 10s. The lease renews every ClaimTTL/3 on
	// the lease manager's one scheduler, and is released once the
	// worker has run nothing for ClaimTTL.
	ClaimTTL time.Duration
	// Concurrency bounds the handlers this worker runs at once, counting
	// the claims being taken for them. Recording an attempt's outcome
	// after its handler returned holds no slot (at most Concurrency
	// attempts record at once besides). Default DefaultConcurrency (8).
	Concurrency int
	// ClaimAhead is the window of tasks this worker claims beyond its
	// running handlers: while every handler slot is busy it claims up to
	// ClaimAhead more ready tasks (highest priority first), each under
	// the worker's one lease like any claim, so that when a handler
	// returns the next task is already claimed and its handler starts
	// without waiting on a write. A task claimed ahead that cannot start
	// (Close, the worker's lease lost, the task cancelled) is given back at
	// once: Close releases it (pending again, the attempt not counted)
	// before it waits for running handlers. A task claimed ahead waits
	// for a handler slot of this worker while other workers may be idle,
	// so workers with long handlers should keep it small. KindConcurrency
	// and GroupLimits count claimed-ahead tasks as running; a task whose
	// claim would use its last allowed attempt, or under a RateLimits
	// limit, is not claimed ahead (see the package documentation). Default
	// DefaultClaimAhead (Concurrency, at most 64); negative means none;
	// at most 4096.
	ClaimAhead int
	// KindConcurrency bounds, per kind, the handlers of that kind this
	// worker runs at once (within Concurrency). Default: no bound.
	KindConcurrency map[string]int
	// GroupLimits bounds, per group (kvledger.TaskState.Group, set at
	// submission), the tasks of that group that run at once across all
	// workers of the ledger: a task of a limited group starts only under
	// one of the group's N slots, leases in the lease bucket that the
	// server expires (groups.go). A task whose group is not listed (or
	// empty) is not bounded. Every worker of a ledger should state the
	// same limits: slot i of a group is one key for all of them, so the
	// largest limit stated bounds the group, and a worker that states a
	// smaller N starts its tasks only under the first N slots; a worker
	// that lists no limit for the group runs its tasks unbounded. Each
	// limit is 1..kvlease.MaxSemaphoreSlots; a group is 1..
	// kvledger.MaxGroupBytes of UTF-8, and its slot keys must fit
	// kvlease.DefaultMaxKeyBytes (New refuses a long group on a ledger
	// with a long bucket name). Default: none.
	GroupLimits map[string]int
	// RateLimits bounds, per kind or per group, the tasks that start in
	// any window of a period across all workers of the ledger: at most
	// N starts per Period, each start taking one of N tokens in the
	// lease bucket that the server expires Period after it was taken
	// (ratelimit.go; the rule, its precision and its cost in the package
	// documentation, "Rate limits"). A task under a limit with no token
	// free waits, using no attempt. Every worker of a ledger should
	// state the same limits. At most one limit per kind and one per
	// group; a task under both its kind's and its group's takes a token
	// of each. Default: none.
	RateLimits []RateLimit
	// FairKinds are the kinds whose ready tasks take turns by group
	// (kvledger.TaskState.Group, set at submission): within one
	// priority, this worker starts the first task of each group with
	// ready tasks in turn (round robin), each group's own tasks in the
	// order they became ready, so one group's backlog does not hold
	// back another's; tasks without a group form one group. Priority
	// still goes first. The turns are this worker's: each worker
	// alternates among the groups it sees ready, so across workers the
	// groups are interleaved but not strictly. Cost: a pick is
	// O(log g) in the groups with ready tasks besides the heap of its
	// group (package doc, "Fair groups"); other kinds are unchanged.
	// Default: none (every kind starts its tasks in the order of
	// priority, then readiness).
	FairKinds []string
	// MaxAttempts bounds the attempts of a task whose record leaves
	// MaxAttempts at 0. Default DefaultMaxAttempts (3); 1 disables
	// retries.
	MaxAttempts int
	// Backoff returns the pause before attempt n+1 after attempt n
	// failed (n >= 1). Default: exponential from BackoffBase (1s),
	// doubling, capped at BackoffMax (1h), with full jitter in
	// [d/2, d].
	Backoff func(attempt int) time.Duration
	// BackoffBase and BackoffMax shape the default Backoff.
	BackoffBase, BackoffMax time.Duration
	// Timeout bounds each attempt's handler of a task whose record states
	// no timeout of its own (kvledger.Submission.Timeout): when it has
	// run that long its context ends with cause ErrTimeout, and the
	// attempt fails with that error and is retried by the usual rule (a
	// handler that returns nil anyway completes the task). The claim is
	// kept until the handler has returned. At most kvledger.MaxTimeout.
	// Default 0: no bound.
	Timeout time.Duration
	// MaxSnoozes bounds how often a handler may snooze one task
	// (Snooze): the snooze after the MaxSnoozes-th fails the task
	// (ErrSnoozeLimit). The count is stored in the record
	// (kvledger.TaskState.Snoozes), so it holds across workers. Default
	// DefaultMaxSnoozes (100).
	MaxSnoozes int
	// DrainTimeout is how long Close lets running handlers finish before
	// it cancels them (cause ErrDraining); each one's claim is given back
	// once it returned. Default 30s; negative means do not wait.
	DrainTimeout time.Duration
	// OpTimeout bounds each ledger write the worker makes. Default 5s.
	OpTimeout time.Duration
	// MaxResultBytes bounds a result's JSON (Task.SetResult). Default
	// 64 KiB; at most kvledger.MaxResultBytes.
	MaxResultBytes int
	// Clock is the time written into records (UpdatedAt, LeaseUntil)
	// and compared with RunAt, and the clock of the timers that wake the
	// worker when a RunAt, retry or schedule period comes due:
	// natscoord's one clock interface (Now and
	// AfterFunc; kvlock.RealClock and kvlock.ManualClock are two). Default
	// the system clock. Liveness never depends on it: leases are judged by
	// the server and by the lease manager's monotonic clock.
	Clock clock.Clock
	// Logger receives one line per attempt that did not complete
	// (failed, retried, given back, lost, cancelled, released by a
	// drain: Error for a failure, Info for a cancellation or a drain's
	// release, Warn for the rest) and the worker's own faults.
	// Default: discard.
	Logger *slog.Logger
	// Observer receives one call per handler start and finish. Default:
	// none. See SlogObserver.
	Observer Observer
	// IgnoreStoredSchedules keeps the worker from running the schedules
	// stored in the ledger (kvledger.Schedule, declared with `natscoord
	// ledger schedule add` or tasks.Client.Schedule). Default false: the
	// worker runs every stored schedule whose kind it has a handler for,
	// as it runs those registered with Schedule, and starts or stops one
	// as its record watch delivers the change.
	IgnoreStoredSchedules bool
}

func (c Config) withDefaults() (Config, error) {
	c.LeaseBucket = cmp.Or(c.LeaseBucket, DefaultLeaseBucket)
	c.ClaimTTL = cmp.Or(c.ClaimTTL, DefaultClaimTTL)
	c.Concurrency = cmp.Or(c.Concurrency, DefaultConcurrency)
	switch {
	case c.ClaimAhead == 0:
		c.ClaimAhead = min(c.Concurrency, DefaultClaimAhead)
	case c.ClaimAhead < 0:
		c.ClaimAhead = 0
	}
	c.MaxAttempts = cmp.Or(c.MaxAttempts, DefaultMaxAttempts)
	c.MaxSnoozes = cmp.Or(c.MaxSnoozes, DefaultMaxSnoozes)
	c.BackoffBase = cmp.Or(c.BackoffBase, DefaultBackoffBase)
	c.BackoffMax = cmp.Or(c.BackoffMax, DefaultBackoffMax)
	c.DrainTimeout = cmp.Or(c.DrainTimeout, DefaultDrainTimeout)
	c.OpTimeout = cmp.Or(c.OpTimeout, DefaultOpTimeout)
	c.MaxResultBytes = cmp.Or(c.MaxResultBytes, DefaultMaxResultBytes)
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	if err := kvlease.ValidateTTL(c.ClaimTTL); err != nil {
		return bad("ClaimTTL: %v", err)
	}
	switch {
	case c.Concurrency < 0:
		return bad("Concurrency %d is negative", c.Concurrency)
	case c.ClaimAhead > MaxClaimAhead:
		return bad("ClaimAhead %d above %d", c.ClaimAhead, MaxClaimAhead)
	case c.MaxAttempts < 0:
		return bad("MaxAttempts %d is negative", c.MaxAttempts)
	case c.Timeout < 0 || c.Timeout > kvledger.MaxTimeout:
		return bad("Timeout %v outside 0..%v", c.Timeout, kvledger.MaxTimeout)
	case c.MaxSnoozes < 0:
		return bad("MaxSnoozes %d is negative", c.MaxSnoozes)
	case c.BackoffBase < 0 || c.BackoffMax < c.BackoffBase:
		return bad("BackoffBase %v, BackoffMax %v", c.BackoffBase, c.BackoffMax)
	case c.OpTimeout < 10*time.Millisecond:
		return bad("OpTimeout %v below 10ms", c.OpTimeout)
	case c.MaxResultBytes < 0 || c.MaxResultBytes > kvledger.MaxResultBytes:
		return bad("MaxResultBytes %d outside 0..%d", c.MaxResultBytes, kvledger.MaxResultBytes)
	}
	for k, n := range c.KindConcurrency {
		if n <= 0 {
			return bad("KindConcurrency[%q] = %d must be positive", k, n)
		}
	}
	for _, k := range c.FairKinds {
		if k == "" {
			return bad("FairKinds: an empty kind")
		}
	}
	for g, n := range c.GroupLimits {
		switch {
		case g == "" || len(g) > kvledger.MaxGroupBytes || !utf8.ValidString(g):
			return bad("GroupLimits: group %q must be 1..%d bytes of UTF-8", g, kvledger.MaxGroupBytes)
		case n < 1 || n > kvlease.MaxSemaphoreSlots:
			return bad("GroupLimits[%q] = %d outside 1..%d", g, n, kvlease.MaxSemaphoreSlots)
		}
	}
	if err := validRateLimits(c.RateLimits); err != nil {
		return c, err
	}
	if c.Backoff == nil {
		base, ceil := c.BackoffBase, c.BackoffMax
		c.Backoff = func(n int) time.Duration { return expBackoff(base, ceil, n) }
	}
	return c, nil
}

// expBackoff is base*2^(n-1), capped at ceil, jittered into [d/2, d].
// It never doubles past ceil: with a ceiling near the Duration range,
// doubling first and capping after overflowed to a negative pause.
func expBackoff(base, ceil time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < ceil; i++ {
		if d > ceil/2 {
			d = ceil
			break
		}
		d *= 2
	}
	d = min(d, ceil)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}
