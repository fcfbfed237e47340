package kvlease

import (
	"context"
	"time"
)

// TryAcquireKeyDetached is TryAcquireKey whose lease does not end with
// ctx: see AcquireKeyDetached.
func (m *Manager) TryAcquireKeyDetached(ctx context.Context, key string, ttl time.Duration) (*Guard, bool, error) {
	return m.AcquireKeyDetached(ctx, key, ttl, 0)
}

// AcquireKeyDetached is AcquireKey for a lease whose lifetime is set by
// its holder, not by the acquiring context: ctx bounds only the attempt
// and the wait, and the guard lives until Release, loss or the manager's
// Close. Its context carries ctx's values.
//
// A layer that gives its own objects a lifetime (kvlock's Lock, which
// lives until its Release whatever the context of Acquire) uses this
// instead of detaching ctx and re-attaching it: each layer sets the
// lifetime once. If ctx ends while an attempt is landing, the lease that
// landed is released and ctx's error returned, as with AcquireKey.
func (m *Manager) AcquireKeyDetached(ctx context.Context, key string, ttl, wait time.Duration) (*Guard, bool, error) {
	if err := m.checkRawKey(key); err != nil {
		return nil, false, err
	}
	g, ok, err := m.acquire(ctx, request{keys: []string{key}, ttl: ttl, detached: true}, wait)
	if g != nil && ctx.Err() != nil {
		_ = g.Release(context.WithoutCancel(ctx))
		return nil, false, context.Cause(ctx)
	}
	return g, ok, err
}
