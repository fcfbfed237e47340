package kvx

import (
	"context"
	"sync"
	"time"
)

// Every bound on a wait for the server is real time, and this is the one
// place that says why (the guard TestLibraryReadsTimeOnlyThroughClock,
// internal/testsuite/modcheck, lists the others): nats.go takes its
// bounds as contexts, and a context's deadline (context.WithTimeout,
// WithDeadline) ends on the system clock, whatever Clock the component
// runs on. That is no judgement of a time: it is how long we wait for
// an answer, which only real time can make pass (a test's manual clock
// moving on answers nothing). So OpTimeout, the hub's watch bounds and
// the retry pause (internal/retry) read time's clock directly, and
// components with a Clock spell such bounds clock.Real(). Times that
// are judged (a record's stamps, RunAt, a phase) come from the caller's
// Clock; liveness from the server's TTLs.
//
// OpTimeout bounds single operations by a timeout without a timer per
// operation where it can. A context.WithTimeout costs about half a
// microsecond (a context, a runtime timer, its cancellation), which is
// close to one percent of a lock cycle on a local server; an operation
// whose caller's context can never end (context.Background,
// context.WithoutCancel) instead shares a context that ends between d/2
// and d from now, replaced lazily once less than d/2 of it is left.
// Replaced contexts are not cancelled: operations still using one keep
// their bound, and its own timer releases it.
type OpTimeout struct {
	d time.Duration

	mu     sync.Mutex
	shared context.Context
	end    time.Time
	// stop is the shared context's cancel func, kept only to be
	// explicit: it is never called (see above).
	stop context.CancelFunc
}

// NewOpTimeout returns an OpTimeout of d (> 0).
func NewOpTimeout(d time.Duration) *OpTimeout { return &OpTimeout{d: d} }

// Duration returns d, the bound of one operation.
func (o *OpTimeout) Duration() time.Duration { return o.d }

// Bound returns ctx bounded by the timeout: ctx itself when its own
// deadline comes within d, the shared context when ctx cannot end (its
// values are not carried: the result is for the I/O call only), else
// context.WithTimeout(ctx, d). A caller's later deadline never lifts the
// bound: one operation takes at most d, so that a stalled connection
// cannot hold a call for as long as the caller is willing to wait. The
// cancel func must be called.
func (o *OpTimeout) Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		if time.Until(dl) <= o.d {
			return ctx, func() {}
		}
		return context.WithTimeout(ctx, o.d)
	}
	if ctx.Done() != nil {
		return context.WithTimeout(ctx, o.d)
	}
	return o.Shared(), func() {}
}

// Shared returns the shared context: it ends between d/2 and d from now.
func (o *OpTimeout) Shared() context.Context {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.shared == nil || o.end.Sub(now) < o.d/2 {
		o.end = now.Add(o.d)
		o.shared, o.stop = context.WithDeadline(context.Background(), o.end)
	}
	return o.shared
}

// Detached is the context of cleanup work that follows a write which
// stands whatever its caller does next (the release of a lease no record
// names, kvledger's claim guards; the worker's operations): ctx's
// values without its cancellation, so that a caller giving up right
// after the write does not stop it, bounded by d, the bound of one
// operation, so that it ends. The cancel func must be called.
func Detached(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}
