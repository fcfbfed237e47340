package kvlease

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Guard is one held lease: one ownership interval of one key, from a
// successful acquisition (or Restore) to Release, loss, Export or the
// manager's Close. Its methods are safe for concurrent use.
//
// A guard's context is derived from the context passed to the call that
// acquired it: cancelling that context releases the lease. Pass a context
// that lives as long as the work the lease protects (context.WithoutCancel
// keeps values and drops cancellation), or acquire detached
// (Manager.AcquireKeyDetached), where that context bounds only the
// attempt and the wait.
type Guard struct {
	m      *Manager
	family Name // "" for raw keys
	key    string
	fence  uint64
	ttl    time.Duration
	sttl   time.Duration // the server-side TTL: ttl rounded up to seconds
	margin time.Duration
	owner  string // hash of secret
	secret secret
	value  []byte

	ctx        context.Context
	cancel     context.CancelCauseFunc
	stopParent func() bool
	done       chan struct{} // closed when ended and cleaned up

	opMu sync.Mutex // serializes this guard's writes: renew, guarded put, export, delete

	mu         sync.Mutex
	rev        uint64
	lastSent   time.Time
	born       time.Time // send time of the guard's first write (never changes)
	validUntil time.Time
	cause      error      // nil while held
	hooks      []*endHook // AfterEnd, run once cause is set
	every      time.Duration
	nextRenew  time.Time
	renewing   bool
	renewHook  RenewHook // OnAutoRenew

	handed bool // a HandOver landed (mu)

	releaseOnce sync.Once
	releaseErr  error // set before done closes

	at   time.Time // scheduler.mu
	hidx int       // scheduler.mu; -1 when not scheduled
}

// newGuard builds a held guard; the caller registers and schedules it.
func (m *Manager) newGuard(parent context.Context, family Name, key string, rev uint64, sent time.Time,
	ttl time.Duration, sec secret, owner string, value []byte) *Guard {
	g := &Guard{
		m: m, family: family, key: key, fence: rev, ttl: ttl, sttl: serverTTL(ttl), margin: Margin(ttl),
		owner: owner, secret: sec, value: value, done: make(chan struct{}),
		rev: rev, lastSent: sent, born: sent, validUntil: sent.Add(ttl - Margin(ttl)), hidx: -1,
	}
	g.ctx, g.cancel = context.WithCancelCause(parent)
	return g
}

// start registers g with the manager and its scheduler and ties it to its
// parent context. It returns false when the manager closed meanwhile.
func (g *Guard) start(parent context.Context) bool {
	if !g.m.register(g) {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cause == nil {
		g.m.sched.set(g, g.validUntil)
		if parent.Done() != nil { // an uncancellable parent (With, Background) needs no hook
			// The cause names the parent's too: this hook and the
			// parent's cancelling of g.ctx race, and whichever lands
			// first, the guard's context must say why it ended.
			g.stopParent = context.AfterFunc(parent, func() {
				g.startRelease(fmt.Errorf("%w: %w", ErrReleased, context.Cause(parent)))
			})
		}
	}
	return true
}

// Key returns the lease key in the bucket ("<family>.<encoded key>", or
// the raw key given to Manager.TryAcquireKey/AcquireKey).
func (g *Guard) Key() string { return g.key }

// Family returns the guard's family name ("" for raw keys).
func (g *Guard) Family() Name { return g.family }

// TTL returns the TTL the lease was acquired with.
func (g *Guard) TTL() time.Duration { return g.ttl }

// Fence returns the fencing token of this ownership interval: the KV
// revision at which the lease was acquired (or restored). It never changes
// during the guard's life, and every later holder of the key gets a
// strictly greater fence, so a resource that remembers the highest fence
// it has seen and refuses writes carrying a smaller one ("accept f >=
// highest") excludes every stale holder.
func (g *Guard) Fence() uint64 { return g.fence }

// Revision returns the lease key's current revision, which changes on
// every renewal. Guarded writes (Proof) are conditional on it; use Fence
// for resources.
func (g *Guard) Revision() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rev
}

// ValidUntil returns the end of the current validity window on the
// holder's clock: (send time of the last confirmed write) + TTL -
// Margin(TTL).
func (g *Guard) ValidUntil() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.validUntil
}

// Context returns a context that is cancelled, with ErrLost, ErrReleased
// or ErrExported as its cause (context.Cause), when the guard ends. It
// carries the values of the context the lease was acquired with.
func (g *Guard) Context() context.Context { return g.ctx }

// Done is closed once the guard has ended and its cleanup (the release's
// conditional delete) has finished.
func (g *Guard) Done() <-chan struct{} { return g.done }

// Err returns nil while the guard holds its lease and why it ended
// otherwise. It checks the validity window against the clock right now, so
// a process that was paused (GC, SIGSTOP, a VM migration) past its window
// gets ErrLost here even before any timer has fired.
func (g *Guard) Err() error {
	g.mu.Lock()
	cause, vu := g.cause, g.validUntil
	g.mu.Unlock()
	if cause != nil {
		return cause
	}
	if g.m.now().Before(vu) {
		return nil
	}
	g.lose(fmt.Errorf("%w: validity window of %q ended at %s", ErrLost, g.key, vu.Format(time.RFC3339Nano)), true)
	return g.ended()
}

func (g *Guard) ended() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cause
}

// StartRenewing makes the manager's scheduler renew the lease every
// interval (0 means TTL/3, which With uses) until the guard ends. A
// renewal that fails transiently is retried within the validity window; a
// renewal that finds the key changed ends the guard with ErrLost. The
// interval must leave room to renew before the window ends: 0 < interval
// < TTL - Margin(TTL).
func (g *Guard) StartRenewing(interval time.Duration) error {
	if interval == 0 {
		interval = g.ttl / 3
	}
	if interval <= 0 || interval >= g.ttl-g.margin {
		return fmt.Errorf("%w: %v for TTL %v (window %v)", ErrNotRenewable, interval, g.ttl, g.ttl-g.margin)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cause != nil {
		return g.cause
	}
	g.every = interval
	g.nextRenew = g.lastSent.Add(interval)
	g.m.sched.set(g, g.nextDueLocked())
	return nil
}

// StopRenewing stops automatic renewal; the guard stays held until its
// window ends unless renewed by Renew.
func (g *Guard) StopRenewing() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cause == nil {
		g.every = 0
		g.m.sched.set(g, g.validUntil)
	}
}

func (g *Guard) nextDueLocked() time.Time {
	if g.every > 0 && !g.renewing && g.nextRenew.Before(g.validUntil) {
		return g.nextRenew
	}
	return g.validUntil
}

// due runs on the scheduler goroutine when g's entry comes up.
func (m *Manager) due(g *Guard) {
	now := m.now()
	g.mu.Lock()
	if g.cause != nil {
		g.mu.Unlock()
		return
	}
	if !now.Before(g.validUntil) {
		vu := g.validUntil
		g.mu.Unlock()
		g.lose(fmt.Errorf("%w: validity window of %q ended at %s without a confirmed renewal", ErrLost, g.key, vu.Format(time.RFC3339Nano)), true)
		return
	}
	if g.every > 0 && !g.renewing && !now.Before(g.nextRenew) {
		g.renewing = true
		m.sched.set(g, g.validUntil)
		g.mu.Unlock()
		m.pool.push(g)
		return
	}
	m.sched.set(g, g.nextDueLocked())
	g.mu.Unlock()
}

func (g *Guard) autoRenew() {
	// Not g.m.ctx: Close must not cancel a renewal in flight. A cancelled
	// publish may still land, and reading the key at once to find out can
	// race the publish itself; the release that follows would then delete
	// at a stale revision and fail. Release waits for the renewal instead
	// (opMu), which OpTimeout bounds.
	hook := g.renewHookOf()
	took, err := g.renew(context.Background(), hook != nil)
	if hook != nil {
		hook(took, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.renewing = false
	if g.cause != nil {
		return
	}
	if err != nil {
		g.m.stats.renewFailures.Add(1)
		g.m.log.Debug("kvlease: renewal failed, retrying", "key", g.key, "err", err)
		g.nextRenew = g.m.now().Add(retryEvery(g.ttl))
	}
	g.m.sched.set(g, g.nextDueLocked())
}
