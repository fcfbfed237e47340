package kvlock

import (
	"context"
)

// Hold acquires key's lock (waiting like Acquire) and keeps it with a
// watchdog that renews it every RenewInterval. It returns:
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
func (l *Locker) Hold(ctx context.Context, key string) (context.Context, func(), error) {
	k, err := l.Acquire(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	k.startWatchdog()
	hctx, cancel := context.WithCancelCause(context.WithValue(ctx, tokenKey{}, k.Token()))
	kctx := k.Context()
	stopLost := context.AfterFunc(kctx, func() { cancel(context.Cause(kctx)) })
	stopParent := context.AfterFunc(ctx, func() { _ = k.Release(context.Background()) })
	release := func() {
		stopLost()
		stopParent()
		cancel(ErrReleased)
		if err := k.Release(context.Background()); err != nil {
			l.log.Debug("kvlock: release after hold", "lock", l.cfg.Name, "key", key, "err", err)
		}
	}
	return hctx, release, nil
}
