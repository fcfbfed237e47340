package kvlock

import (
	"context"
)

// Hold acquires key's lock (waiting like Acquire) and keeps it: kvlease's
// renewal scheduler renews it every RenewInterval. It returns:
//
//   - a context derived from ctx that carries the fencing token
//     (TokenFromContext) and is cancelled, with a cause matching ErrLost,
//     as soon as the lock can no longer be confirmed: a renewal finds it
//     taken over, or the validity window (last confirmed renewal's send
//     time + TTL - margin) runs out, which happens before the server can
//     expire the lock and let anyone else acquire it;
//   - a release func to call (typically deferred) once the guarded work has
//     returned: it cancels the context (ErrReleased) and then releases the
//     lock owner-conditionally. It is idempotent.
//
// Cancelling ctx also ends the hold and releases the lock.
//
// The lease itself is acquired detached from ctx (kvlease's detached
// acquisition); the hold sets its lifetime once: its context is a child of
// ctx, and one registration on ctx releases the lock when ctx ends.
func (l *Locker) Hold(ctx context.Context, key string) (context.Context, func(), error) {
	if err := ValidateKey(key); err != nil {
		return nil, nil, err
	}
	k, err := l.acquire(ctx, l.lockSpec(key), true)
	if err != nil {
		return nil, nil, err
	}
	k.ctxMu.Lock()
	k.hold = ctx // before the first Context call: the lock's context derives from ctx
	k.ctxMu.Unlock()
	if err := k.keep(); err != nil {
		_ = k.Release(context.WithoutCancel(ctx))
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = k.Release(context.WithoutCancel(ctx)) })
	release := func() {
		stop()
		if err := k.Release(context.WithoutCancel(ctx)); err != nil {
			l.log.Debug("kvlock: release after hold", "lock", l.cfg.Name, "key", key, "err", err)
		}
	}
	return k.Context(), release, nil
}
