package kvlease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

func TestContentionBetweenManagers(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 20*time.Second)

	g1, ok, err := l1.TryAcquire(ctx, "a.b c", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "jobs.a=2Eb=20c", g1.Key())
	require.NoError(t, g1.Err())

	g2, ok, err := l2.TryAcquire(ctx, "a.b c", 5*time.Second)
	require.NoError(t, err)
	require.False(t, ok)
	require.Nil(t, g2)
	require.EqualValues(t, 1, m2.Stats().Contended)

	h, held, err := l2.Holder(ctx, "a.b c")
	require.NoError(t, err)
	require.True(t, held)
	require.Equal(t, "one", h.ID)
	require.Equal(t, g1.Fence(), h.Revision)
	require.Len(t, h.OwnerHash, 64)

	require.NoError(t, g1.Release(ctx))
	require.ErrorIs(t, g1.Err(), kvlease.ErrReleased)
	require.ErrorIs(t, context.Cause(g1.Context()), kvlease.ErrReleased)
	natstest.WaitClosed(t, g1.Done(), time.Second, "released guard done")

	g2, ok, err = l2.TryAcquire(ctx, "a.b c", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.Greater(t, g2.Fence(), g1.Fence(), "a later holder has a greater fence")
	key, err := l2.KeyOf(g2)
	require.NoError(t, err)
	require.Equal(t, "a.b c", key)
	require.NoError(t, g2.Release(ctx))

	s := m1.Stats()
	require.EqualValues(t, 1, s.Acquired)
	require.EqualValues(t, 1, s.Released)
	require.EqualValues(t, 0, s.Active)
}

func TestAcquireWaitsForRelease(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 20*time.Second)

	g1, ok, err := l1.TryAcquire(ctx, "w", 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	got := make(chan *kvlease.Guard, 1)
	go func() {
		g, ok, err := l2.Acquire(ctx, "w", 10*time.Second, 10*time.Second)
		if err != nil || !ok {
			t.Errorf("acquire: ok=%v err=%v", ok, err)
		}
		got <- g
	}()
	// Both attempts (before and after subscribing) found it held.
	natstest.Eventually(t, 5*time.Second, func() bool { return m2.Stats().Contended >= 2 }, "waiter is waiting")
	require.NoError(t, g1.Release(ctx))
	g2 := natstest.Recv(t, got, 5*time.Second, "waiter acquires after release")
	require.NotNil(t, g2)
	require.Greater(t, g2.Fence(), g1.Fence())
	require.NoError(t, g2.Release(ctx))
}

func TestAcquireWaitRunsOut(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 20*time.Second)
	g1, ok, err := l1.TryAcquire(ctx, "held", 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	g, ok, err := l2.Acquire(ctx, "held", 10*time.Second, 200*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a wait that runs out says so")
	require.False(t, ok)
	require.Nil(t, g)

	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, cancel)
	_, ok, err = l2.Acquire(cctx, "held", 10*time.Second, 5*time.Second)
	require.ErrorIs(t, err, context.Canceled, "the caller's cancellation is")
	require.False(t, ok)
	require.NoError(t, g1.Release(ctx))
}

func TestExpiryAfterHolderStops(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 20*time.Second)

	g1, ok, err := l1.TryAcquire(ctx, "crash", time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, g1.Abandon()) // the holder stops without releasing

	// Woken by the server's expiry marker, not by polling.
	start := time.Now()
	g2, ok, err := l2.Acquire(ctx, "crash", 5*time.Second, 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.Less(t, time.Since(start), 4*time.Second)
	require.Greater(t, g2.Fence(), g1.Fence())
	require.NoError(t, g2.Release(ctx))
}

func TestRenewalKeepsLeasePastTTL(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 20*time.Second)

	g, ok, err := l1.TryAcquire(ctx, "long", time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, g.StartRenewing(0))
	fence := g.Fence()

	select {
	case <-g.Context().Done():
		t.Fatalf("lost while renewing: %v", context.Cause(g.Context()))
	case <-time.After(2500 * time.Millisecond): // 2.5 TTLs
	}
	require.NoError(t, g.Err())
	require.Equal(t, fence, g.Fence(), "the fence is the acquisition revision")
	require.Greater(t, g.Revision(), fence, "renewals move the revision")
	require.GreaterOrEqual(t, m1.Stats().Renewals, uint64(4))
	_, ok, err = l2.TryAcquire(ctx, "long", time.Second)
	require.NoError(t, err)
	require.False(t, ok, "still held after 2.5 TTLs")

	// Explicit renewal works alongside the scheduler.
	require.NoError(t, g.Renew(ctx))
	require.NoError(t, g.Release(ctx))
	require.Equal(t, 0, m1.Scheduled())
}

func TestForceReleaseCancelsHolder(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 20*time.Second)

	g, ok, err := l1.TryAcquire(ctx, "stuck", 3*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	const every = time.Second
	require.NoError(t, g.StartRenewing(every))

	forced, err := l2.ForceRelease(ctx, "stuck")
	require.NoError(t, err)
	require.True(t, forced)
	forcedAt := time.Now()
	natstest.WaitClosed(t, g.Context().Done(), every+500*time.Millisecond, "holder's context cancelled within one renew interval")
	require.Less(t, time.Since(forcedAt), every+500*time.Millisecond)
	require.ErrorIs(t, context.Cause(g.Context()), kvlease.ErrLost)
	require.ErrorIs(t, g.Err(), kvlease.ErrLost)
	require.EqualValues(t, 1, m1.Stats().Lost)
	require.EqualValues(t, 1, m2.Stats().ForceReleased)

	forced, err = l2.ForceRelease(ctx, "stuck")
	require.NoError(t, err)
	require.False(t, forced, "nothing left to force")
	require.NoError(t, g.Release(ctx), "releasing a lost guard is a no-op")
}

func TestPausedHolderSeesLoss(t *testing.T) {
	m1, _ := pair(t)
	l1 := bind(t, jobs, m1)
	ctx := natstest.Context(t, 20*time.Second)

	g, ok, err := l1.TryAcquire(ctx, "paused", 2*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, g.Err())
	// TTL - margin: 2s - 200ms.
	require.WithinDuration(t, time.Now().Add(1800*time.Millisecond), g.ValidUntil(), 100*time.Millisecond)

	// The process "sleeps" past its window: no timer has fired, yet Err
	// knows synchronously.
	m1.SetClock(func() time.Time { return time.Now().Add(2 * time.Second) })
	require.ErrorIs(t, g.Err(), kvlease.ErrLost)
	require.ErrorIs(t, context.Cause(g.Context()), kvlease.ErrLost)
	require.ErrorIs(t, g.Renew(ctx), kvlease.ErrLost)
	natstest.WaitClosed(t, g.Done(), 5*time.Second, "cleanup after loss")
	m1.SetClock(time.Now)

	// The loss cleanup deleted the key it still held at the server.
	_, held, err := l1.Holder(ctx, "paused")
	require.NoError(t, err)
	require.False(t, held)
}

func TestReleaseIsIdempotentAndNeverDeletesANewerHolder(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 20*time.Second)

	g, ok, err := l1.TryAcquire(ctx, "r", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	errs := make(chan error, 8)
	for range 8 {
		go func() { errs <- g.Release(ctx) }()
	}
	for range 8 {
		require.NoError(t, natstest.Recv(t, errs, 5*time.Second, "release"))
	}
	require.EqualValues(t, 1, m1.Stats().Released, "one attempt shared by all")

	// A stale guard whose key was force-released and re-acquired.
	g, ok, err = l1.TryAcquire(ctx, "r", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = l2.ForceRelease(ctx, "r")
	require.NoError(t, err)
	g2, ok, err := l2.TryAcquire(ctx, "r", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.ErrorIs(t, g.Release(ctx), kvlease.ErrLost)
	h, held, err := l2.Holder(ctx, "r")
	require.NoError(t, err)
	require.True(t, held, "the late release left the new holder's lease alone")
	require.Equal(t, g2.Fence(), h.Revision)
	require.NoError(t, g2.Release(ctx))
}

func TestCallerContextCancelReleases(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 20*time.Second)
	cctx, cancel := context.WithCancel(ctx)
	g, ok, err := l1.TryAcquire(cctx, "c", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	cancel()
	natstest.WaitClosed(t, g.Done(), 5*time.Second, "released on caller cancel")
	require.ErrorIs(t, g.Err(), kvlease.ErrReleased)
	g2, ok, err := l2.TryAcquire(ctx, "c", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, g2.Release(ctx))
}

func TestWith(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 20*time.Second)

	ran, err := l1.With(ctx, "w", time.Second, 0, func(ctx context.Context) error {
		_, ok, err := l2.TryAcquire(ctx, "w", time.Second)
		require.NoError(t, err)
		require.False(t, ok)
		select { // longer than the TTL: the manager renews
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(1500 * time.Millisecond):
		}
		return errors.New("fn failed")
	})
	require.True(t, ran)
	require.EqualError(t, err, "fn failed")
	require.EqualValues(t, 0, m1.Stats().Active)

	// Loss while fn runs cancels fn's context and is reported.
	ran, err = l1.With(ctx, "w", 3*time.Second, 0, func(fctx context.Context) error {
		_, err := l2.ForceRelease(ctx, "w")
		require.NoError(t, err)
		<-fctx.Done()
		return nil
	})
	require.True(t, ran)
	require.ErrorIs(t, err, kvlease.ErrLost)
}

func TestCloseReleasesAll(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	m1, err := kvlease.NewManager(ctx, n.JS, kvlease.Config{})
	require.NoError(t, err)
	m2 := newManager(t, n.NewJS(t), kvlease.Config{})
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)

	keys := []string{"a", "b", "c", "d", "e"}
	var gs []*kvlease.Guard
	for i, k := range keys {
		g, ok, err := l1.TryAcquire(ctx, k, 30*time.Second)
		require.NoError(t, err)
		require.True(t, ok)
		if i%2 == 0 {
			require.NoError(t, g.StartRenewing(0))
		}
		gs = append(gs, g)
	}
	require.EqualValues(t, len(keys), m1.Stats().Active)
	require.NoError(t, m1.Close(ctx))
	natstest.WaitClosed(t, m1.Done(), time.Second, "manager done")
	for _, g := range gs {
		require.ErrorIs(t, g.Err(), kvlease.ErrReleased)
		require.ErrorIs(t, g.Err(), kvlease.ErrClosed)
	}
	for _, k := range keys {
		g, ok, err := l2.TryAcquire(ctx, k, 30*time.Second)
		require.NoError(t, err)
		require.True(t, ok, "Close released %q", k)
		require.NoError(t, g.Release(ctx))
	}
	_, _, err = l1.TryAcquire(ctx, "z", time.Second)
	require.ErrorIs(t, err, kvlease.ErrClosed)
	require.NoError(t, m1.Close(ctx), "Close is idempotent")
}

// Once a manager's watch runs, a waiter subscribes first and takes the
// key's state from what the watch has reported: a key seen held is not
// tried at all, and its release wakes the waiter, round after round.
func TestWaitOnRunningWatch(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 30*time.Second)

	for round := range 4 {
		g1, ok, err := l1.TryAcquire(ctx, "rw", 10*time.Second)
		require.NoError(t, err)
		require.True(t, ok, "round %d", round)
		before := m2.Stats().Contended
		got := make(chan *kvlease.Guard, 1)
		go func() {
			g, ok, err := l2.Acquire(ctx, "rw", 10*time.Second, 10*time.Second)
			if err != nil || !ok {
				t.Errorf("round %d: acquire: ok=%v err=%v", round, ok, err)
			}
			got <- g
		}()
		natstest.Eventually(t, 5*time.Second, func() bool { return m2.Stats().Contended > before }, "waiter is waiting")
		require.NoError(t, g1.Release(ctx))
		g2 := natstest.Recv(t, got, 5*time.Second, "waiter acquires after release")
		require.NotNil(t, g2)
		require.Greater(t, g2.Fence(), g1.Fence())
		require.NoError(t, g2.Release(ctx))
	}
}
