package kvlease

import (
	"context"
	"errors"
	"fmt"

	"github.com/natscoord/natscoord/internal/kvx"
)

// Release ends the guard (its context is cancelled with ErrReleased first,
// so protected work stops before the key can change hands) and deletes the
// lease on condition that the key is still at the guard's revision: a late
// release never deletes a newer holder's lease. It is idempotent and
// concurrent calls share one attempt; ctx only bounds the waiting (the
// attempt itself is bounded by OpTimeout). It returns an error
// matching ErrLost when the lease had already been taken over, and nil
// when the guard had already ended by loss or export (Err says why).
//
// The delete is sent from the calling goroutine: a hand-off to another
// goroutine costs a wake-up on every release, which on a busy machine is
// most of the time a lock handover takes (BENCHMARKS.md). When ctx ends
// with the delete in flight, Release returns at once and a goroutine of
// the manager settles the delete by reading the key.
func (g *Guard) Release(ctx context.Context) error {
	if g == nil {
		return nil
	}
	start := g.m.clock()
	err := g.releaseWait(ctx, nil)
	g.m.observe(ctx, Event{Op: OpRelease, Guard: g, Duration: since(start), Err: err})
	return err
}

// releaseWait ends g and deletes its lease (or hands it to to, when set),
// waiting for that as long as ctx allows.
func (g *Guard) releaseWait(ctx context.Context, to *successor) error {
	var cleanup func(context.Context)
	g.releaseOnce.Do(func() { _, cleanup = g.finishTo(ErrReleased, true, true, to) })
	if cleanup != nil {
		cleanup(ctx) // outside the Once: concurrent callers wait on done, with their ctx
	}
	select {
	case <-g.done:
		return g.releaseErr
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (g *Guard) startRelease(cause error) {
	g.releaseOnce.Do(func() { g.end(cause, true, true) })
}

// lose ends the guard with cause (matching ErrLost). cleanup asks for a
// conditional delete: when the loss is only the local window running out,
// the key may still be ours at the server, and deleting it frees it sooner.
func (g *Guard) lose(cause error, cleanup bool) {
	if g.end(cause, cleanup, false) {
		g.m.log.Warn("kvlease: lease lost", "key", g.key, "cause", cause)
		g.m.observe(context.Background(), Event{Op: OpLost, Guard: g, Err: cause})
	}
}

// end moves the guard to its final state once; later calls return false.
// del deletes the lease (conditionally) in a goroutine the manager owns;
// release counts that as a release.
func (g *Guard) end(cause error, del, release bool) bool {
	ended, cleanup := g.finish(cause, del, release)
	if cleanup != nil {
		go cleanup(context.Background()) // owned: finish counted it in the manager's goroutines
	}
	return ended
}

// finish is end without running the delete: it returns it (nil when there
// is none) for the caller to run, closing done when it completes; the
// caller must run it (it is counted in the manager's goroutines). The
// cleanup's argument is the context of a caller waiting for it
// (context.Background: none);
// when that context ends with the delete in flight, the cleanup hands the
// rest to a goroutine of the manager and returns.
func (g *Guard) finish(cause error, del, release bool) (bool, func(context.Context)) {
	return g.finishTo(cause, del, release, nil)
}

// finishTo is finish whose cleanup, when to is set, hands the lease to
// that successor (HandOver) instead of deleting it, falling back to the
// delete when the hand-over is refused.
func (g *Guard) finishTo(cause error, del, release bool, to *successor) (bool, func(context.Context)) {
	g.mu.Lock()
	if g.cause != nil {
		g.mu.Unlock()
		return false, nil
	}
	g.cause = cause
	g.every = 0
	g.m.sched.remove(g)
	stop := g.stopParent
	hooks := g.hooks
	g.hooks = nil
	g.mu.Unlock()
	if errors.Is(cause, ErrLost) {
		// Counted before the context is cancelled, so whoever sees the
		// cancellation also sees the count.
		g.m.stats.lost.Add(1)
	}
	g.cancel(cause)
	if stop != nil {
		stop()
	}
	g.runHooks(hooks)
	if del {
		// The delete joins the manager's goroutines before the guard leaves
		// the manager: a Close that no longer finds the guard among its
		// guards still waits for the delete (and for a settle it hands on),
		// and no goroutine is added once Close has stopped counting.
		g.m.wg.Add(1)
	}
	g.m.unregister(g)
	if !del {
		close(g.done)
		return true, nil
	}
	cleanup := func(wait context.Context) {
		defer g.m.wg.Done()
		if to != nil {
			if handed, err := g.handOver(wait, to); handed || err != nil {
				g.closeRelease(release, err)
				return
			}
		}
		abandoned, err := g.deleteOwn(wait)
		if abandoned {
			g.m.goOwned(func() { g.closeRelease(release, g.settleDelete()) })
			return
		}
		g.closeRelease(release, err)
	}
	return true, cleanup
}

// closeRelease records the delete's result (a release's) and closes done.
func (g *Guard) closeRelease(release bool, err error) {
	if release {
		g.releaseErr = err
		if err == nil {
			g.m.stats.released.Add(1)
		}
	}
	close(g.done)
}

// abort gives back a lease acquired while the manager was closing. It
// deletes synchronously, in the caller's goroutine: Close may already have
// finished waiting for the manager's own goroutines, but not for the
// acquisition (begin), so the bucket is still open for the delete.
func (g *Guard) abort() {
	g.end(ErrClosed, false, false)
	if _, err := g.deleteOwn(context.Background()); err != nil {
		g.m.log.Warn("kvlease: giving back a lease acquired during Close", "key", g.key, "err", err)
	}
}

// deleteOwn deletes the lease at the guard's revision, waiting for any
// in-flight renewal first so the revision is the latest one. It sends the
// delete once; a refusal or a lost answer is settled by settleDeleteAt,
// the one place a release's delete retries. When wait ends while the delete's
// answer is outstanding it stops waiting and reports abandoned: the
// delete may or may not have landed.
func (g *Guard) deleteOwn(wait context.Context) (abandoned bool, err error) {
	g.opMu.Lock()
	defer g.opMu.Unlock()
	g.mu.Lock()
	rev := g.rev
	g.mu.Unlock()
	ctx, cancel := g.finalCtx(wait)
	defer cancel()
	marker, err := g.m.b.DeleteAs(ctx, g.key, rev, markerKeep, g.releaseID())
	if kvx.OutcomeUnknown(err) && wait.Err() != nil {
		return true, nil
	}
	if kvx.IsConflict(err) || kvx.OutcomeUnknown(err) {
		rctx, rcancel := g.m.cleanupCtx()
		defer rcancel()
		marker, err = g.settleDeleteAt(rctx, rev, err)
	}
	switch {
	case err == nil:
		g.m.hints.put(g.key, marker)
		return false, nil
	case errors.Is(err, ErrLost):
		return false, err
	}
	return false, fmt.Errorf("kvlease: release %q: %w", g.key, closedErr(err))
}

// finalCtx bounds a guard's final write (its delete or hand-over) like
// any cleanup, and also ends it when wait ends: a context of its own, so
// that a waiter giving up stops only this write (cleanupCtx may be
// shared).
func (g *Guard) finalCtx(wait context.Context) (context.Context, func()) {
	ctx, cancel := g.m.cleanupCtx()
	if wait.Done() == nil {
		return ctx, cancel
	}
	ctx, stop := context.WithCancel(ctx)
	unhook := context.AfterFunc(wait, stop)
	return ctx, func() { unhook(); stop(); cancel() }
}

// settleDelete finishes a release whose caller stopped waiting while the
// delete was in flight: it reads the key and deletes again only if the
// key is still at the guard's revision with its owner hash. A key that
// has moved on was released by that first delete (or expired and was
// taken since): either way the guard no longer holds anything.
func (g *Guard) settleDelete() error {
	g.mu.Lock()
	rev := g.rev
	g.mu.Unlock()
	ctx, cancel := g.m.cleanupCtx()
	e, err := g.m.b.Get(ctx, g.key)
	cancel()
	switch {
	case errors.Is(err, kvx.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("kvlease: release %q: %w", g.key, err)
	case e.Revision != rev || !ownedBy(e.Value, g.owner):
		return nil
	}
	_, err = g.deleteOwn(context.Background())
	if kvx.IsConflict(err) || errors.Is(err, ErrLost) {
		return nil // the first delete landed after our read
	}
	return err
}
