package kvlock

import (
	"context"
	"time"
)

// Service is what a service needs from a lock backend: locks with fencing
// tokens, Hold with a watchdog, and elections. Depend on it rather than on
// *Locker, and a unit test can hand the code the in-process backend
// (NewMemory) instead of starting a server.
//
// Two implementations have the same semantics, checked by one conformance
// suite (package kvlock/locktest): the NATS Locker (Locker.Service, or
// Open with a nats:// URL) and the in-process Memory (NewMemory, or Open
// with memory:). Tokens rise with every acquisition of a key, a lock that
// is not renewed ends with ErrLost when its validity window closes, the
// loss of a held lock cancels Hold's context, and waiting is woken by
// releases, never by polling.
type Service interface {
	// TryAcquire tries once: (lock, true, nil) on success, (nil, false,
	// nil) when the lock is held (or, in fair mode, has a queue). Errors
	// are real failures, never contention.
	TryAcquire(ctx context.Context, key string) (Held, bool, error)
	// Acquire waits until the lock is free or ctx ends. ctx bounds only
	// the wait; the lock lasts until Release, loss or Close. It is not
	// renewed automatically: call Renew, or use Hold.
	Acquire(ctx context.Context, key string) (Held, error)
	// Hold acquires like Acquire and renews the lock every RenewInterval.
	// It returns a context carrying the token (TokenFromContext) that is
	// cancelled, with a cause matching ErrLost, as soon as the lock is
	// lost, and an idempotent release func (typically deferred).
	// Cancelling ctx also ends the hold and releases the lock.
	Hold(ctx context.Context, key string) (context.Context, func(), error)
	// Election returns a candidate for the election called name.
	Election(name string) (Candidate, error)
	// Close releases every lock still held, ends waiters (ErrClosed) and
	// observers, and waits for the backend's goroutines. Idempotent.
	Close(ctx context.Context) error
}

// Held is one held lock, from acquisition to Release, loss or Close. *Lock
// is the NATS implementation.
type Held interface {
	// Key returns the lock key.
	Key() string
	// Token returns the fencing token: every later holder of the key has
	// a strictly greater one.
	Token() uint64
	// Context is cancelled when the lock ends, with a cause matching
	// ErrLost or ErrReleased; it carries the token (TokenFromContext).
	Context() context.Context
	// Done is closed once the lock has ended.
	Done() <-chan struct{}
	// Err is nil while the lock is held, else why it ended. It checks the
	// validity window against the clock synchronously.
	Err() error
	// ValidUntil is the end of the current validity window.
	ValidUntil() time.Time
	// Renew extends the lock by the TTL and restarts its window.
	Renew(ctx context.Context) error
	// Release gives the lock up owner-conditionally. It is idempotent; a
	// lock that was lost first returns an error matching ErrLost.
	Release(ctx context.Context) error
}

// Candidate is one candidate in a leader election. *Election is the NATS
// implementation.
type Candidate interface {
	// Name returns the election's name.
	Name() string
	// Campaign blocks until the candidate leads (or ctx ends), then
	// publishes value. A second Campaign while campaigning or leading
	// returns ErrCampaigning.
	Campaign(ctx context.Context, value string) error
	// Proclaim publishes a new value while leading, else ErrNotLeader.
	Proclaim(ctx context.Context, value string) error
	// Resign gives up leadership (ErrNotLeader when not leading).
	Resign(ctx context.Context) error
	// Leader returns the current leader, or ErrNoLeader.
	Leader(ctx context.Context) (LeaderInfo, error)
	// Observe reports the current state, then every new leader, new value
	// and vacancy, until ctx ends or the backend closes.
	Observe(ctx context.Context) <-chan LeaderEvent
	// Term is this candidate's term while it leads, else 0.
	Term() uint64
	// Done is closed when this candidate's leadership ends (already
	// closed when it does not lead).
	Done() <-chan struct{}
	// Context is the leadership's context (nil when not leading).
	Context() context.Context
}

// ForceReleaser is the administrative capability of removing a lock
// whatever its holder (both backends have it). The holder is not told at
// once: it learns at its next renewal or validity check (ErrLost).
type ForceReleaser interface {
	ForceRelease(ctx context.Context, key string) (bool, error)
}

var (
	_ Held      = (*Lock)(nil)
	_ Candidate = (*Election)(nil)
	_ Service   = natsService{}
	_ Service   = (*Memory)(nil)

	_ ForceReleaser = natsService{}
	_ ForceReleaser = (*Memory)(nil)
)

// Service returns l behind the Service interface. Closing the Service
// closes l.
func (l *Locker) Service() Service { return natsService{l} }

// natsService adapts *Locker's concrete results to the interfaces.
type natsService struct{ l *Locker }

func (s natsService) TryAcquire(ctx context.Context, key string) (Held, bool, error) {
	k, ok, err := s.l.TryAcquire(ctx, key)
	if k == nil {
		return nil, ok, err
	}
	return k, ok, err
}

func (s natsService) Acquire(ctx context.Context, key string) (Held, error) {
	k, err := s.l.Acquire(ctx, key)
	if k == nil {
		return nil, err
	}
	return k, err
}

func (s natsService) Hold(ctx context.Context, key string) (context.Context, func(), error) {
	return s.l.Hold(ctx, key)
}

func (s natsService) Election(name string) (Candidate, error) {
	e, err := NewElection(s.l, name)
	if e == nil {
		return nil, err
	}
	return e, err
}

func (s natsService) Close(ctx context.Context) error { return s.l.Close(ctx) }

// ForceRelease removes key's lock through the Locker's kvlease manager.
func (s natsService) ForceRelease(ctx context.Context, key string) (bool, error) {
	lk, err := s.l.LeaseKey(key)
	if err != nil {
		return false, err
	}
	ok, err := s.l.m.ForceReleaseKey(ctx, lk)
	return ok, mapErr(err)
}
