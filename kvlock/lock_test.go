package kvlock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvlock"
)

// fencedResource is the resource of the fencing check: it refuses tokens
// below the highest it has accepted and detects overlapping holders.
type fencedResource struct {
	mu       sync.Mutex
	highest  uint64
	inside   int
	rejected int
	overlaps int
}

func (r *fencedResource) enter(token uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token < r.highest {
		r.rejected++
		return fmt.Errorf("stale token %d < %d", token, r.highest)
	}
	r.highest = token
	r.inside++
	if r.inside > 1 {
		r.overlaps++
	}
	return nil
}

func (r *fencedResource) write(token uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token < r.highest {
		r.rejected++
		return fmt.Errorf("stale token %d < %d", token, r.highest)
	}
	return nil
}

func (r *fencedResource) leave() {
	r.mu.Lock()
	r.inside--
	r.mu.Unlock()
}

func TestEightContendersFencing(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 40*time.Second)
	var res fencedResource
	const contenders, rounds = 8, 6
	var wg sync.WaitGroup
	var held atomic.Int64
	for i := range contenders {
		l := newLocker(t, n.NewJS(t), kvlock.Config{TTL: 2 * time.Second, Holder: fmt.Sprintf("c%d", i)})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				hctx, release, err := l.Hold(ctx, "shared")
				if !assertNoErr(t, err) {
					return
				}
				tok, ok := kvlock.TokenFromContext(hctx)
				if !ok || res.enter(tok) != nil {
					t.Errorf("live holder refused (token %d, ok %v)", tok, ok)
				}
				held.Add(1)
				for range 3 {
					if hctx.Err() == nil && res.write(tok) != nil {
						t.Errorf("live holder's write refused")
					}
				}
				res.leave()
				release()
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int64(contenders*rounds), held.Load())
	require.Zero(t, res.rejected, "a live holder was refused")
	require.Zero(t, res.overlaps, "two holders overlapped")
}

func assertNoErr(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("unexpected error: %v", err)
		return false
	}
	return true
}

func TestTryAcquireReleaseOwnerConditional(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	a := newLocker(t, n.JS, kvlock.Config{TTL: 2 * time.Second})
	b := newLocker(t, n.NewJS(t), kvlock.Config{TTL: 2 * time.Second})

	k1, ok, err := a.TryAcquire(ctx, "res")
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = b.TryAcquire(ctx, "res")
	require.NoError(t, err)
	require.False(t, ok, "held by a")

	// An administrator force-releases a's lock; b takes it.
	lk, err := a.LeaseKey("res")
	require.NoError(t, err)
	forced, err := b.Manager().ForceReleaseKey(ctx, lk)
	require.NoError(t, err)
	require.True(t, forced)
	k2, ok, err := b.TryAcquire(ctx, "res")
	require.NoError(t, err)
	require.True(t, ok)
	require.Greater(t, k2.Token(), k1.Token(), "fencing tokens grow")

	// a's late release does not delete b's lock, and says it was lost.
	err = k1.Release(ctx)
	require.ErrorIs(t, err, kvlock.ErrLost)
	require.ErrorIs(t, err, kvlease.ErrLost)
	require.ErrorIs(t, k1.Release(ctx), kvlock.ErrLost, "idempotent")
	require.NoError(t, k2.Err())
	_, ok, err = a.TryAcquire(ctx, "res")
	require.NoError(t, err)
	require.False(t, ok, "b still holds")

	require.NoError(t, k2.Renew(ctx))
	require.NoError(t, k2.Release(ctx))
	require.ErrorIs(t, context.Cause(k2.Context()), kvlock.ErrReleased)
	k3, ok, err := a.TryAcquire(ctx, "res")
	require.NoError(t, err)
	require.True(t, ok)
	tok, ok := kvlock.TokenFromContext(k3.Context())
	require.True(t, ok)
	require.Equal(t, k3.Token(), tok)
	require.NoError(t, k3.Release(ctx))
}

func TestAcquireWaitsForReleaseAndCtx(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	a := newLocker(t, n.JS, kvlock.Config{TTL: 5 * time.Second})
	b := newLocker(t, n.NewJS(t), kvlock.Config{TTL: 5 * time.Second})
	k1, err := a.Acquire(ctx, "w")
	require.NoError(t, err)

	// A bounded wait gives up with ctx's error and holds nothing.
	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = b.Acquire(sctx, "w")
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)

	got := make(chan *kvlock.Lock, 1)
	go func() {
		k, err := b.Acquire(ctx, "w")
		assertNoErr(t, err)
		got <- k
	}()
	select {
	case <-got:
		t.Fatal("acquired a held lock")
	case <-time.After(100 * time.Millisecond): // negative check: nothing may arrive
	}
	released := time.Now()
	require.NoError(t, k1.Release(ctx))
	k2 := natstest.Recv(t, got, 5*time.Second, "waiter acquires after release")
	t.Logf("release to waiter's acquisition: %v", time.Since(released))
	// The lock outlives the Acquire call's context: ctx bounds only the wait.
	require.NoError(t, k2.Err())
	require.NoError(t, k2.Release(ctx))
}

func TestHoldCancelsWithinRenewIntervalAfterForceRelease(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	const every = 200 * time.Millisecond
	l := newLocker(t, n.JS, kvlock.Config{TTL: 3 * time.Second, RenewInterval: every})
	admin := newLocker(t, n.NewJS(t), kvlock.Config{})

	hctx, release, err := l.Hold(ctx, "job")
	require.NoError(t, err)
	defer release()
	tok, ok := kvlock.TokenFromContext(hctx)
	require.True(t, ok)
	require.NotZero(t, tok)

	// The watchdog keeps the lock past its TTL.
	renewed := l.Stats().Lease.Renewals
	natstest.Eventually(t, 5*time.Second, func() bool { return l.Stats().Lease.Renewals >= renewed+3 }, "renewals")
	require.NoError(t, hctx.Err())

	lk, err := l.LeaseKey("job")
	require.NoError(t, err)
	forced, err := admin.Manager().ForceReleaseKey(ctx, lk)
	require.NoError(t, err)
	require.True(t, forced)
	start := time.Now()
	natstest.WaitClosed(t, hctx.Done(), 5*time.Second, "hold context cancelled")
	took := time.Since(start)
	t.Logf("hold cancelled %v after the force release (renew interval %v)", took, every)
	require.LessOrEqual(t, took, every+150*time.Millisecond)
	require.ErrorIs(t, context.Cause(hctx), kvlock.ErrLost)
	release()
	release() // idempotent
}

func TestHoldReleaseAndParentCancel(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	l := newLocker(t, n.JS, kvlock.Config{TTL: 2 * time.Second})
	hctx, release, err := l.Hold(ctx, "h")
	require.NoError(t, err)
	release()
	require.ErrorIs(t, context.Cause(hctx), kvlock.ErrReleased)
	k, ok, err := l.TryAcquire(ctx, "h")
	require.NoError(t, err)
	require.True(t, ok, "release freed the lock")
	require.NoError(t, k.Release(ctx))

	// Cancelling the caller's context ends the hold and frees the lock.
	pctx, cancel := context.WithCancel(ctx)
	hctx, release, err = l.Hold(pctx, "h")
	require.NoError(t, err)
	defer release()
	cancel()
	natstest.WaitClosed(t, hctx.Done(), 2*time.Second, "hold ends with its parent")
	natstest.Eventually(t, 5*time.Second, func() bool {
		k, ok, err := l.TryAcquire(ctx, "h")
		if ok {
			_ = k.Release(ctx)
		}
		return err == nil && ok
	}, "lock freed after the parent was cancelled")
}

func TestCloseReleasesAndRefuses(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	l, err := kvlock.New(ctx, n.JS, kvlock.Config{TTL: 5 * time.Second})
	require.NoError(t, err)
	other := newLocker(t, n.NewJS(t), kvlock.Config{TTL: 5 * time.Second})
	hctx, release, err := l.Hold(ctx, "c")
	require.NoError(t, err)
	waiting := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx, "c2-held")
		waiting <- err
	}()
	require.NoError(t, l.Close(ctx))
	require.NoError(t, l.Close(ctx), "idempotent")
	natstest.WaitClosed(t, hctx.Done(), time.Second, "hold ends on Close")
	release()
	_, _, err = l.TryAcquire(ctx, "c")
	require.ErrorIs(t, err, kvlock.ErrClosed)
	select {
	case err := <-waiting:
		if err != nil { // it may have acquired before Close (then Close released it)
			require.ErrorIs(t, err, kvlock.ErrClosed)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not ended by Close")
	}
	k, ok, err := other.TryAcquire(ctx, "c")
	require.NoError(t, err)
	require.True(t, ok, "Close released the lock")
	require.NoError(t, k.Release(ctx))
}

type recorder struct {
	mu     sync.Mutex
	events []kvlock.Event
}

func (r *recorder) add(e kvlock.Event)                          { r.mu.Lock(); r.events = append(r.events, e); r.mu.Unlock() }
func (r *recorder) OnAcquire(_ context.Context, e kvlock.Event) { r.add(e) }
func (r *recorder) OnRenew(_ context.Context, e kvlock.Event)   { r.add(e) }
func (r *recorder) OnRelease(_ context.Context, e kvlock.Event) { r.add(e) }
func (r *recorder) OnLost(_ context.Context, e kvlock.Event)    { r.add(e) }

func (r *recorder) ops() map[kvlock.Op]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[kvlock.Op]int{}
	for _, e := range r.events {
		m[e.Op]++
	}
	return m
}

func TestObserverSeesEveryOperation(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	var rec recorder
	l := newLocker(t, n.JS, kvlock.Config{Name: "obs", TTL: time.Second, RenewInterval: 100 * time.Millisecond, Observer: &rec})
	hctx, release, err := l.Hold(ctx, "o")
	require.NoError(t, err)
	natstest.Eventually(t, 5*time.Second, func() bool { return rec.ops()[kvlock.OpRenew] >= 2 }, "renew events")
	_, ok, err := l.TryAcquire(ctx, "o")
	require.NoError(t, err)
	require.False(t, ok)
	lk, _ := l.LeaseKey("o")
	_, err = l.Manager().ForceReleaseKey(ctx, lk)
	require.NoError(t, err)
	natstest.WaitClosed(t, hctx.Done(), 2*time.Second, "loss")
	natstest.Eventually(t, 2*time.Second, func() bool { return rec.ops()[kvlock.OpLost] == 1 }, "lost event")
	release()
	ops := rec.ops()
	require.Equal(t, 2, ops[kvlock.OpAcquire])
	require.Equal(t, 1, ops[kvlock.OpRelease])
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Equal(t, "obs", rec.events[0].Name)
	require.Equal(t, "o", rec.events[0].Key)
	require.True(t, rec.events[0].Acquired)
	require.NotZero(t, rec.events[0].Token)
	for _, e := range rec.events {
		if e.Op == kvlock.OpLost {
			require.ErrorIs(t, e.Err, kvlock.ErrLost)
		}
	}
}

// The lock's context is made on first use; whether that is before or
// after the lock ended, it carries the token and ends with ErrReleased.
func TestLockContextMadeBeforeOrAfterRelease(t *testing.T) {
	n := natstest.WithServer(t)
	l := newLocker(t, n.JS, kvlock.Config{TTL: 5 * time.Second})
	ctx := natstest.Context(t, 10*time.Second)

	k, ok, err := l.TryAcquire(ctx, "ctx-order")
	require.NoError(t, err)
	require.True(t, ok)
	kctx := k.Context()
	require.NoError(t, kctx.Err())
	tok, ok := kvlock.TokenFromContext(kctx)
	require.True(t, ok)
	require.Equal(t, k.Token(), tok)
	require.NoError(t, k.Release(ctx))
	require.ErrorIs(t, context.Cause(kctx), kvlock.ErrReleased)
	select {
	case <-k.Done():
	default:
		require.FailNow(t, "Done not closed after Release")
	}

	k2, ok, err := l.TryAcquire(ctx, "ctx-order")
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, k2.Release(ctx))
	k2ctx := k2.Context()
	require.ErrorIs(t, context.Cause(k2ctx), kvlock.ErrReleased)
	tok2, ok := kvlock.TokenFromContext(k2ctx)
	require.True(t, ok)
	require.Greater(t, tok2, tok)
	require.ErrorIs(t, k2.Err(), kvlock.ErrReleased)
}
