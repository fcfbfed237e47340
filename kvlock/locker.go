package kvlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvlease"
)

// Locker hands out locks (and elections) kept in one kvlease bucket under
// one Name. It owns a kvlease.Manager, which does the lease work: create
// with a per-key TTL, renew by compare-and-set, owner-conditional release
// and push-woken waiting. It is safe for concurrent use.
type Locker struct {
	cfg Config
	m   *kvlease.Manager
	log *slog.Logger
	opt *kvx.OpTimeout // bounds queue reads by OpTimeout

	// view is the view of this Locker's keys ("<name>.>": locks, queues,
	// elections) that fair waiters look at and are woken by, and whose
	// ordered feeds serve Observe. It is kept by the manager's own watch
	// of the bucket (one consumer per Locker), which it turns into a view
	// at the first fair wait or Observe only.
	view *kvlease.View

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wgMu   sync.Mutex // orders wg.Add against Close's wg.Wait
	wgShut bool
	wg     sync.WaitGroup // observers, end handlers, queue leaves

	closeOnce sync.Once
	done      chan struct{}
	closeErr  error

	wakeups atomic.Uint64
	brk     *breaker // the circuit breaker (see BreakerPolicy)
}

// Stats counts a Locker's activity.
type Stats struct {
	// FairWakeups counts the times a fair waiter was woken to look at the
	// queue again: its predecessor left the queue or took the lock
	// (renewal events, which need no work, are not counted, nor is the
	// lock's own event that hands a waiter the lock or frees it for the
	// first in line). One per release when the queue works as designed.
	FairWakeups uint64
	// Lease is the underlying kvlease manager's counters.
	Lease kvlease.Stats
}

// New creates a Locker: it opens (creating if needed) cfg.Bucket through
// a new kvlease.Manager. Invalid configs return ErrInvalidConfig.
func New(ctx context.Context, js jetstream.JetStream, cfg Config) (*Locker, error) {
	if js == nil {
		return nil, fmt.Errorf("%w: nil JetStream", ErrInvalidConfig)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m, err := kvlease.NewManager(ctx, js, kvlease.Config{
		Bucket: cfg.Bucket, Replicas: cfg.Replicas, OpTimeout: cfg.OpTimeout,
		Holder: cfg.Holder, Logger: cfg.Logger,
	})
	if err != nil {
		if errors.Is(err, kvlease.ErrInvalidConfig) {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		return nil, fmt.Errorf("kvlock: %w", err)
	}
	view, err := m.View(cfg.Name)
	if err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.OpTimeout)
		defer cancel()
		_ = m.Close(cctx)
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	lctx, cancel := context.WithCancel(context.Background())
	return &Locker{
		cfg: cfg, m: m, log: cfg.Logger, opt: kvx.NewOpTimeout(cfg.OpTimeout),
		view: view,
		ctx:  lctx, cancel: cancel, done: make(chan struct{}), brk: newBreaker(cfg),
	}, nil
}

// Config returns the Locker's configuration with defaults filled in.
func (l *Locker) Config() Config { return l.cfg }

// Manager returns the kvlease manager behind the Locker (for
// ForceReleaseKey, Stats and the like). Closing it closes the Locker's
// leases; use Locker.Close instead.
func (l *Locker) Manager() *kvlease.Manager { return l.m }

// LeaseKey returns the bucket key holding key's lock ("<name>.l.<key>"),
// for operators and kvlease.Manager.ForceReleaseKey.
func (l *Locker) LeaseKey(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return lockSpec(l.cfg.Name, key).lease, nil
}

// Stats returns a snapshot of the Locker's counters.
func (l *Locker) Stats() Stats {
	return Stats{FairWakeups: l.wakeups.Load(), Lease: l.m.Stats()}
}

// Done is closed when Close has finished.
func (l *Locker) Done() <-chan struct{} { return l.done }

// Close ends observers and waiters, releases every lock still held (each
// release bounded by OpTimeout) and waits for every goroutine of the
// Locker. If ctx ends first it returns ctx's error and the shutdown goes on
// in the background (Done reports it). It is idempotent.
func (l *Locker) Close(ctx context.Context) error {
	l.closeOnce.Do(func() {
		l.cancel()
		go func() {
			err := l.m.Close(context.Background())
			l.wgMu.Lock()
			l.wgShut = true
			l.wgMu.Unlock()
			l.wg.Wait()
			l.closeErr = mapErr(err)
			close(l.done)
		}()
	})
	select {
	case <-l.done:
		return l.closeErr
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// goOwned runs f in a goroutine Close waits for. It refuses (returns
// false) once Close has started.
func (l *Locker) goOwned(f func()) bool {
	if l.ctx.Err() != nil || !l.addOwned() {
		return false
	}
	go func() {
		defer l.wg.Done()
		f()
	}()
	return true
}

// addOwned counts one more goroutine Close must wait for, unless Close is
// already waiting (then the caller must not start it under the count).
func (l *Locker) addOwned() bool {
	l.wgMu.Lock()
	defer l.wgMu.Unlock()
	if l.wgShut {
		return false
	}
	l.wg.Add(1)
	return true
}

// TryAcquire tries once to take key's lock. It returns (lock, true, nil)
// on success and (nil, false, nil) when the lock is held, or in fair mode
// when others are queued for it (TryAcquire never jumps a queue it can
// see). Errors are real failures, never contention. The lock is held until
// Release, loss or Close; ctx bounds only the attempt.
func (l *Locker) TryAcquire(ctx context.Context, key string) (*Lock, bool, error) {
	if err := ValidateKey(key); err != nil {
		return nil, false, err
	}
	k, err := l.acquire(ctx, l.lockSpec(key), false)
	return k, k != nil, err
}

// Acquire takes key's lock, waiting while it is held until it is free or
// ctx ends. Waiting is woken by a KV watch (a release or the server's
// expiry of the holder's lease), never by polling; in fair mode waiters
// are served in arrival order. The lock is held until Release, loss or
// Close (ctx bounds only the wait). It does not renew itself: call Renew,
// or use Hold, which has kvlease's scheduler renew it.
func (l *Locker) Acquire(ctx context.Context, key string) (*Lock, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	return l.acquire(ctx, l.lockSpec(key), true)
}

func (l *Locker) acquire(ctx context.Context, s spec, wait bool) (*Lock, error) {
	start := l.clock()
	var (
		k   *Lock
		err error
	)
	switch {
	case l.ctx.Err() != nil:
		err = ErrClosed
	case l.cfg.Fair && wait:
		k, err = l.acquireFair(ctx, s)
	case l.cfg.Fair:
		k, err = l.tryFair(ctx, s)
	default:
		var g *kvlease.Guard
		g, err = l.acquireLease(ctx, s.lease, wait)
		if g != nil {
			k = l.newLock(s, g, false)
		}
	}
	if err != nil && k == nil && l.ctx.Err() != nil && !errors.Is(err, ErrClosed) {
		// Close ended the wait while a read or write of it was in flight:
		// that operation's own error (a closed connection, say) is the
		// Locker closing, and the caller is told so.
		err = fmt.Errorf("%w: %w", ErrClosed, err)
	}
	l.observe(ctx, Event{Op: OpAcquire, Key: s.key, Token: k.Token(), Duration: since(start),
		Acquired: k != nil, Fair: l.cfg.Fair, Err: err})
	if err == nil && k != nil && l.log.Enabled(ctx, slog.LevelDebug) {
		// Checked first: boxing the arguments costs allocations on every
		// acquisition even when debug logging is off.
		l.log.Debug("kvlock: acquired", "lock", l.cfg.Name, "key", s.key, "token", k.Token())
	}
	return k, err
}

// acquireLease takes the lease key through kvlease, barging: every waiter
// is woken by a release and the first publish wins. The acquisition is
// detached (kvlease.Manager.AcquireKeyDetached): ctx bounds only the wait,
// and the lease lives until the Lock ends it.
func (l *Locker) acquireLease(ctx context.Context, key string, wait bool) (*kvlease.Guard, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		var g *kvlease.Guard
		// unknown is a failed try that may have landed: a later try that
		// finds the key held may be finding that very write, so "held"
		// would turn a transient error into contention.
		var unknown error
		err := l.retry(ctx, transientAcquire, func() error {
			var err error
			if wait {
				g, _, err = l.m.AcquireKeyDetached(ctx, key, l.cfg.TTL, waitFor(ctx))
			} else {
				g, _, err = l.m.TryAcquireKeyDetached(ctx, key, l.cfg.TTL)
				if err != nil && !notSent(err) {
					unknown = err
				}
			}
			if wait && g == nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return nil // the wait ran out (or one try timed out) while ctx lives: wait again
			}
			return err
		})
		if g != nil {
			return g, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		if !wait && unknown != nil && (err == nil || notSent(err)) {
			// Neither "held" nor "not sent" settles the earlier try.
			return nil, mapErr(unknown)
		}
		if err != nil || !wait {
			return nil, mapErr(err)
		}
	}
}

// waitFor is the wait handed to kvlease: until ctx's deadline, at most
// kvlease's default MaxWait (a longer wait is simply repeated). A
// context's deadline is on the real clock.
func waitFor(ctx context.Context) time.Duration {
	w := kvlease.DefaultMaxWait
	if d, ok := ctx.Deadline(); ok {
		w = min(w, max(d.Sub(clock.Real().Now()), time.Millisecond))
	}
	return w
}
