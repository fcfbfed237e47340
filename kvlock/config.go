package kvlock

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvlease"
)

// Defaults of Config.
const (
	DefaultName      = "lock"
	DefaultTTL       = 10 * time.Second
	DefaultOpTimeout = kvlease.DefaultOpTimeout
	// DefaultRetryAttempts counts the first try: 3 means up to two retries.
	DefaultRetryAttempts = 3
	DefaultRetryBackoff  = 50 * time.Millisecond
	DefaultRetryMax      = time.Second
)

// Config configures a Locker. The zero value is valid: every field states
// its default, and New rejects values out of range with ErrInvalidConfig.
type Config struct {
	// Name is the first token of every key this Locker writes, so several
	// lock families can share one bucket: 1..64 bytes of [A-Za-z0-9_-].
	// It also labels log lines and observer events. Default "lock".
	Name string
	// Bucket is the kvlease bucket holding the locks. Default
	// kvlease.DefaultBucket. Created (History 1, per-key TTLs) when missing.
	Bucket string
	// Replicas is the bucket's replication factor when New creates it.
	// Default 1; use 3 for a lock service that survives a node loss.
	Replicas int
	// TTL is the server-side lifetime of a lock that is not renewed:
	// kvlease.MinTTL (1s) .. kvlease.MaxTTL (24h). A crashed holder's lock
	// frees itself after at most TTL (rounded up to whole seconds).
	// Default 10s (when zero); a negative TTL is an error.
	//
	// The floor is one second, not the 10ms that Redis-based locks accept:
	// the NATS server counts per-key TTLs in whole seconds with a minimum
	// of one, so a shorter TTL could not be kept by the server. A TTL below
	// 1s is refused with ErrInvalidConfig rather than silently raised.
	// Fractions above it are fine (1.5s is stored as 2s on the server; the
	// holder's window uses 1.5s, so the holder always gives up first).
	TTL time.Duration
	// RenewInterval is how often a held lock (Hold, an election leader)
	// is renewed by kvlease's scheduler. It must be positive and at most
	// TTL/3, so two missed renewals in a row still leave room for a third
	// before the validity window ends. Default TTL/3 (when zero); a negative
	// interval is an error.
	RenewInterval time.Duration
	// OpTimeout bounds each single server operation whose context has no
	// earlier deadline (and every cleanup: releases on Close). A caller's
	// later deadline does not lift it. Default 5s.
	OpTimeout time.Duration
	// Retry bounds the retries of transient errors; see RetryPolicy. It
	// is the only retry budget that spans operations (a policy on the one
	// retry primitive, internal/retry): CallCeiling states the longest a
	// call can take with it (31.15 s with the defaults).
	Retry RetryPolicy
	// Breaker is the circuit breaker in front of server operations; see
	// BreakerPolicy. Default on: 5 consecutive transient failures open it
	// for a 2s cool-down.
	Breaker BreakerPolicy
	// Fair makes waiters acquire in arrival order through a queue (see
	// the package documentation). Default false: barging, which is
	// faster; every Locker of one Name and bucket must use the same mode.
	Fair bool
	// Holder is the public id written into lock values (who holds what).
	// Default kvlease's "<host>:<pid>:<nuid>".
	Holder string
	// Logger receives debug lines about acquisitions and releases and
	// warnings about losses. Default: discard.
	Logger *slog.Logger
	// Observer receives one call per acquisition, renewal, release and
	// loss (metrics, traces). Default: none. See SlogObserver.
	Observer Observer
}

// RetryPolicy bounds how often an operation is retried after a TRANSIENT
// error (no responders, no stream leader, not connected, and for
// acquisitions a timed-out request). Contention, loss and invalid input
// are never retried. A write whose outcome is unknown is never retried
// blindly: kvlease first resolves it by reading the key back from the
// stream leader, and only an acquisition (a create-if-absent, which cannot
// harm another holder) is attempted again when that read failed too.
type RetryPolicy struct {
	// Attempts is the number of tries including the first. Default 3;
	// 1 disables retries.
	Attempts int
	// Backoff is the pause before the first retry; it doubles per retry up
	// to MaxBackoff. Defaults 50ms and 1s.
	Backoff    time.Duration
	MaxBackoff time.Duration
}

func (c Config) withDefaults() (Config, error) {
	c.Name = cmp.Or(c.Name, DefaultName)
	if err := kvlease.Name(c.Name).Validate(); err != nil {
		return c, fmt.Errorf("%w: Name %q: 1..64 bytes of [A-Za-z0-9_-]", ErrInvalidConfig, c.Name)
	}
	if err := c.checkTimings(); err != nil {
		return c, err
	}
	c.OpTimeout = cmp.Or(c.OpTimeout, DefaultOpTimeout)
	if c.OpTimeout < 0 {
		return c, fmt.Errorf("%w: negative OpTimeout %v", ErrInvalidConfig, c.OpTimeout)
	}
	replicas, err := kvx.CheckReplicas(c.Replicas)
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	c.Replicas = replicas
	r := &c.Retry
	r.Attempts = cmp.Or(r.Attempts, DefaultRetryAttempts)
	r.Backoff = cmp.Or(r.Backoff, DefaultRetryBackoff)
	if r.MaxBackoff == 0 {
		r.MaxBackoff = max(DefaultRetryMax, r.Backoff)
	}
	if r.Attempts < 1 || r.Attempts > 100 || r.Backoff < 0 || r.MaxBackoff < r.Backoff {
		return c, fmt.Errorf("%w: Retry %+v: Attempts 1..100, 0 <= Backoff <= MaxBackoff", ErrInvalidConfig, *r)
	}
	if err := c.Breaker.withDefaults(); err != nil {
		return c, err
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c, nil
}

// checkTimings defaults and validates TTL and RenewInterval: zero takes
// the documented default, a negative value is refused (it is a mistake,
// not a request for the default), and so is a TTL below the server's
// one-second floor.
func (c *Config) checkTimings() error {
	switch {
	case c.TTL < 0:
		return fmt.Errorf("%w: negative TTL %v (zero means the default %v)", ErrInvalidConfig, c.TTL, DefaultTTL)
	case c.RenewInterval < 0:
		return fmt.Errorf("%w: negative RenewInterval %v (zero means TTL/3)", ErrInvalidConfig, c.RenewInterval)
	}
	c.TTL = cmp.Or(c.TTL, DefaultTTL)
	if c.TTL < kvlease.MinTTL {
		return fmt.Errorf("%w: TTL %v is below the %v floor: the NATS server keeps per-key TTLs in whole seconds, at least one", ErrInvalidConfig, c.TTL, kvlease.MinTTL)
	}
	if err := kvlease.ValidateTTL(c.TTL); err != nil {
		return fmt.Errorf("%w: TTL %v outside %v..%v", ErrInvalidConfig, c.TTL, kvlease.MinTTL, kvlease.MaxTTL)
	}
	if c.RenewInterval == 0 {
		c.RenewInterval = c.TTL / 3
	}
	if c.RenewInterval > c.TTL/3 {
		return fmt.Errorf("%w: RenewInterval %v above TTL/3 (%v)", ErrInvalidConfig, c.RenewInterval, c.TTL/3)
	}
	return nil
}
