package kvlease

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// With acquires key's lease (waiting up to wait), runs fn while the
// manager renews the lease every TTL/3, and releases it after fn returns.
// fn's context is the guard's: it is cancelled with ErrLost as soon as the
// lease is lost, and fn should then stop promptly. With returns whether fn
// ran, and fn's error joined with ErrLost (if the lease was lost while fn
// ran) and any release error.
//
// The manager owns fn while it runs: Close waits for it (and Done closes
// only after it returned), so a callback that ignores its ctx delays
// Close. A panic in fn releases the lease and comes back as an error
// matching ErrPanicked, with the panic value and stack; it never leaves
// the lease held and renewed.
func (l Leases[K]) With(ctx context.Context, key K, ttl, wait time.Duration, fn func(context.Context) error) (bool, error) {
	return l.WithProof(ctx, key, ttl, wait, func(ctx context.Context, _ Proof) error { return fn(ctx) })
}

// WithProof is With whose callback also receives the guard's Proof, for
// writes that must land only while the lease is held.
func (l Leases[K]) WithProof(ctx context.Context, key K, ttl, wait time.Duration, fn func(context.Context, Proof) error) (bool, error) {
	if fn == nil {
		return false, errors.New("kvlease: nil callback")
	}
	g, ok, err := l.Acquire(ctx, key, ttl, wait)
	if err != nil || !ok {
		return false, err
	}
	return true, runHeld(ctx, g, fn)
}

func runHeld(ctx context.Context, g *Guard, fn func(context.Context, Proof) error) error {
	if err := g.m.addCallback(); err != nil {
		_ = g.Release(context.WithoutCancel(ctx))
		return err
	}
	defer g.m.callbacks.Done()
	if err := g.StartRenewing(0); err != nil {
		_ = g.Release(context.WithoutCancel(ctx))
		return err
	}
	fnErr := callHeld(g, fn)
	var lost error
	if err := g.Err(); errors.Is(err, ErrLost) {
		lost = err
	}
	relErr := g.Release(context.WithoutCancel(ctx))
	if lost != nil && errors.Is(relErr, ErrLost) {
		relErr = nil // the same loss, seen again by the release
	}
	return errors.Join(fnErr, lost, relErr)
}

// callHeld runs fn, turning a panic into an ErrPanicked error so that the
// caller still releases the lease.
func callHeld(g *Guard, fn func(context.Context, Proof) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v\n%s", ErrPanicked, r, debug.Stack())
		}
	}()
	return fn(g.Context(), g.Proof())
}
