package kvlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/natscoord/natscoord/kvlease"
)

// Lock is one held lock: one ownership interval of one key, from its
// acquisition to Release, loss or the Locker's Close. Its methods are safe
// for concurrent use.
type Lock struct {
	l     *Locker
	s     spec
	g     *kvlease.Guard
	fair  bool            // taken through the queue (fair mode)
	hold  context.Context // Hold's context: the base of the lock's context; nil otherwise
	start time.Time

	// ticket is the holder's place in line (0: taken with nobody
	// queued); left is closed once its queue entry is deleted (nil: it
	// had none).
	ticket uint64
	left   <-chan struct{}

	// ctx is the lock's context, made on first use (Context, Done,
	// Hold): a lock taken and released without looking at it costs no
	// contexts of its own. cause is set once the lock has ended.
	ctxMu  sync.Mutex
	ctx    context.Context
	cancel context.CancelCauseFunc
	cause  error
	ended  chan struct{} // closed when the end handler has run
	// stopEnd unregisters the end handler (Guard.AfterEnd); endOwned
	// says whether the handler counts in the Locker's wait group.
	stopEnd  func() bool
	endOwned bool

	relOnce sync.Once
	relErr  error
}

type tokenKey struct{}

// TokenFromContext returns the fencing token of the lock whose context
// (Lock.Context, or the context Hold returns) ctx is or derives from.
// Guarded work passes it with every write to the resource it protects.
func TokenFromContext(ctx context.Context) (uint64, bool) {
	t, ok := ctx.Value(tokenKey{}).(uint64)
	return t, ok
}

func (l *Locker) newLock(s spec, g *kvlease.Guard, fair bool) *Lock {
	k := &Lock{l: l, s: s, g: g, fair: fair, start: l.clock(), ended: make(chan struct{})}
	// Close waits for the end handler (the guard ends at the latest on
	// Close); a lock made while Close is finishing is already ended.
	k.endOwned = l.addOwned()
	k.stopEnd = g.AfterEnd(k.runEnd)
	return k
}

// runEnd runs the end handler once, on behalf of the Locker's wait group.
func (k *Lock) runEnd() {
	if k.endOwned {
		defer k.l.wg.Done()
	}
	k.onEnd()
}

// onEnd runs once the lease has ended, however it ended.
func (k *Lock) onEnd() {
	defer close(k.ended)
	cause := k.endCtx(causeOf(context.Cause(k.g.Context())))
	if errors.Is(cause, ErrLost) {
		k.l.log.Warn("kvlock: lock lost", "lock", k.l.cfg.Name, "key", k.s.key, "token", k.Token(), "cause", cause)
		k.l.observe(context.Background(), Event{Op: OpLost, Key: k.s.key, Token: k.Token(), Duration: since(k.start), Acquired: true, Fair: k.fair, Err: cause})
	}
}

// endCtx ends the lock's context with cause, unless it has ended
// already, and returns the cause it ended with.
func (k *Lock) endCtx(cause error) error {
	k.ctxMu.Lock()
	defer k.ctxMu.Unlock()
	if k.cause == nil {
		k.cause = cause
		if k.cancel != nil {
			k.cancel(cause)
		}
	}
	return k.cause
}

func (k *Lock) holdCtx() context.Context {
	k.ctxMu.Lock()
	defer k.ctxMu.Unlock()
	return k.hold
}

// Key returns the lock key.
func (k *Lock) Key() string { return k.s.key }

// Token returns the lock's fencing token: the KV revision at which it was
// acquired. Every later holder of the key gets a strictly greater token,
// so a resource that keeps the highest token it has accepted and refuses
// smaller ones cannot be written by a stale holder. 0 for a nil Lock.
func (k *Lock) Token() uint64 {
	if k == nil {
		return 0
	}
	return k.g.Fence()
}

// Context returns a context that carries the lock's token
// (TokenFromContext) and the values of the context it was acquired with,
// and is cancelled when the lock ends, with a cause matching ErrLost or
// ErrReleased.
func (k *Lock) Context() context.Context {
	k.ctxMu.Lock()
	defer k.ctxMu.Unlock()
	if k.ctx == nil {
		// The guard's context carries the acquiring context's values
		// but ends with kvlease's causes; the lock's ends with this
		// package's. A held lock's context is a child of Hold's, so it
		// ends the moment that one does.
		parent := k.hold
		if parent == nil {
			parent = context.WithoutCancel(k.g.Context())
		}
		k.ctx, k.cancel = context.WithCancelCause(context.WithValue(parent, tokenKey{}, k.g.Fence()))
		if k.cause != nil {
			k.cancel(k.cause) // made after the end: born cancelled
		}
	}
	return k.ctx
}

// Done is closed once the lock has ended (released, lost or closed).
func (k *Lock) Done() <-chan struct{} { return k.Context().Done() }

// Err returns nil while the lock is held, else why it ended. It checks the
// validity window against the clock now (see kvlease.Guard.Err), so a
// process paused past the window learns it here before any timer fires.
func (k *Lock) Err() error { return causeOf(k.g.Err()) }

// ValidUntil is the end of the lock's current validity window on this
// process's clock: the send time of the last confirmed write + TTL - margin.
func (k *Lock) ValidUntil() time.Time { return k.g.ValidUntil() }

// Renew extends the lock by the TTL (one compare-and-set that also sets a
// fresh server-side TTL) and restarts its validity window. A renewal that
// finds the key taken over ends the lock with ErrLost. Transient errors
// that prove the request was never processed are retried (Config.Retry);
// a renewal whose outcome is unknown is resolved by kvlease reading the
// key back, never retried blindly (a blind retry of a renewal that did land
// would look like a takeover).
func (k *Lock) Renew(ctx context.Context) error {
	start := k.l.clock()
	err := k.l.retryHeld(ctx, notSent, func() error { return k.g.Renew(ctx) })
	err = mapErr(err)
	k.l.observe(ctx, Event{Op: OpRenew, Key: k.s.key, Token: k.Token(), Duration: since(start), Acquired: true, Err: err})
	return err
}

// Release ends the lock and deletes it on condition that the key is still
// at this lock's revision, so a late or repeated release never deletes a
// newer holder's lock. The lock's context is cancelled (ErrReleased) before
// the delete is sent. It is idempotent. It returns an error matching
// ErrLost when the lock had been lost (taken over or expired) before it
// was released: work done under it may have overlapped another holder's.
func (k *Lock) Release(ctx context.Context) error {
	k.relOnce.Do(func() {
		start := k.l.clock()
		// Take the end handler back while the lease is live, so it runs
		// here rather than on a goroutine of the manager that Release
		// would have to wait for (a hand-off per release).
		inline := k.stopEnd()
		if inline {
			// Protected work stops before the delete is sent. A held
			// lock's context ends with ErrReleased itself, as Hold's
			// documentation shows it.
			cause := errReleased
			if k.holdCtx() != nil {
				cause = ErrReleased
			}
			k.endCtx(cause)
		}
		err := k.l.releaseLease(ctx, k.s, k.g, k.ticket, k.left)
		if err == nil {
			if c := k.g.Err(); errors.Is(c, kvlease.ErrLost) {
				err = c
			}
		}
		if inline {
			k.runEnd() // the guard's context is cancelled by now, whatever ctx did
		} else {
			// The lease ended first; its end handler ends the lock from a
			// goroutine of the manager. Wait for it, so that the
			// lock's context is done when Release returns, unless ctx
			// ends first.
			select {
			case <-k.ended:
			case <-ctx.Done():
			}
		}
		k.relErr = mapErr(err)
		k.l.observe(ctx, Event{Op: OpRelease, Key: k.s.key, Token: k.Token(), Duration: since(start), Acquired: true, Fair: k.fair, Err: k.relErr})
	})
	return k.relErr
}

// keep makes kvlease's renewal scheduler renew the lock every
// RenewInterval until it ends (Hold, election leaders). The manager renews
// all its leases from one scheduler and a fixed set of workers, so a
// thousand held locks cost no goroutine or timer each. A renewal that
// fails transiently is tried again within the validity window; one that
// finds the key taken over, or a window that runs out first, ends the
// lock with ErrLost. The Observer sees every renewal through the guard's
// renewal hook.
func (k *Lock) keep() error {
	if k.l.cfg.Observer != nil {
		k.g.OnAutoRenew(func(took time.Duration, err error) {
			if errors.Is(err, kvlease.ErrReleased) || errors.Is(err, kvlease.ErrExported) {
				return // the lock ended before the renewal was sent: nothing to report
			}
			k.l.observe(context.Background(), Event{Op: OpRenew, Key: k.s.key, Token: k.Token(), Duration: took, Acquired: true, Fair: k.fair, Err: mapErr(err)})
		})
	}
	return mapErr(k.g.StartRenewing(k.l.cfg.RenewInterval))
}
