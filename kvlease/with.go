package kvlease

import (
	"context"
	"errors"
	"time"
)

// With acquires key's lease (waiting up to wait), runs fn while the
// manager renews the lease every TTL/3, and releases it after fn returns.
// fn's context is the guard's: it is cancelled with ErrLost as soon as the
// lease is lost, and fn should then stop promptly. With returns whether fn
// ran, and fn's error joined with ErrLost (if the lease was lost while fn
// ran) and any release error.
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
	if err := g.StartRenewing(0); err != nil {
		_ = g.Release(context.WithoutCancel(ctx))
		return err
	}
	fnErr := fn(g.Context(), g.Proof())
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
