package kvlease_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

func TestCloseEndsWaiters(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	holder := newManager(t, n.JS, kvlease.Config{})
	m, err := kvlease.NewManager(ctx, n.NewJS(t), kvlease.Config{})
	require.NoError(t, err)
	lh, lw := bind(t, jobs, holder), bind(t, jobs, m)

	g, ok, err := lh.TryAcquire(ctx, "busy", 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	errc := make(chan error, 1)
	go func() {
		_, _, err := lw.Acquire(ctx, "busy", 30*time.Second, 30*time.Second)
		errc <- err
	}()
	natstest.Eventually(t, 5*time.Second, func() bool { return m.Stats().Contended >= 2 }, "waiting")
	require.NoError(t, m.Close(ctx))
	require.ErrorIs(t, natstest.Recv(t, errc, 5*time.Second, "waiter ends"), kvlease.ErrClosed)
	require.NoError(t, g.Release(ctx))
}

// TestNoGoroutineLeaks holds many renewing guards and a waiter, then
// closes: every goroutine the manager started (scheduler, renewals,
// releases, the shared watch) must be gone.
func TestNoGoroutineLeaks(t *testing.T) {
	n := natstest.WithServer(t)
	js := n.NewJS(t)
	ctx := natstest.Context(t, 20*time.Second)
	// Warm up: the bucket's stream (server goroutines) and the
	// connection's request inbox exist before the baseline is taken.
	warm, err := kvlease.NewManager(ctx, js, kvlease.Config{})
	require.NoError(t, err)
	require.NoError(t, warm.Close(ctx))
	before := natstest.IgnoreCurrent()

	m, err := kvlease.NewManager(ctx, js, kvlease.Config{})
	require.NoError(t, err)
	l := bind(t, jobs, m)
	for i := range 200 {
		g, ok, err := l.TryAcquire(ctx, "k"+string(rune('a'+i%26))+string(rune('a'+i/26)), 3*time.Second)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, g.StartRenewing(100*time.Millisecond))
	}
	_, ok, err := l.Acquire(ctx, "kaa", time.Second, 150*time.Millisecond) // starts the watch, times out
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.False(t, ok)
	natstest.Eventually(t, 5*time.Second, func() bool { return m.Stats().Renewals >= 200 }, "renewals ran")
	require.EqualValues(t, 200, m.Stats().Active)
	// The scheduler pops due guards and re-inserts them after handling
	// them, so a single sample may catch one in between.
	natstest.Eventually(t, 5*time.Second, func() bool { return m.Scheduled() == 200 }, "one heap entry per guard, no goroutine")

	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, m.Close(cctx))
	require.EqualValues(t, 200, m.Stats().Released)
	natstest.VerifyNone(t, before)
}

// An acquisition whose write is in flight when Close starts wins after
// Close refused to register it: Close waits for it to give the lease
// back before it closes the bucket, so the key is free once Done, not
// held until its TTL by a delete the closed bucket refused.
func TestCloseWaitsForAcquisitionInFlight(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	other := bind(t, jobs, newManager(t, n.JS, kvlease.Config{Holder: "two"}))
	p, js := natstest.ThroughProxy(t, n)
	m, err := kvlease.NewManager(ctx, js, kvlease.Config{Holder: "one", OpTimeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.Close(cctx)
	})
	l := bind(t, jobs, m)

	// The write reaches the server; its answer is held back.
	p.Stall(true)
	t.Cleanup(func() { p.Stall(false) })
	errc := make(chan error, 1)
	go func() {
		_, _, err := l.TryAcquire(ctx, "landing", 30*time.Second)
		errc <- err
	}()
	natstest.Eventually(t, 5*time.Second, func() bool {
		_, held, err := other.Holder(ctx, "landing")
		return err == nil && held
	}, "the acquisition's write landed")

	// Close starts (its context already ended: it returns at once and
	// the shutdown goes on) while the answer is still on its way.
	started, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, m.Close(started), context.Canceled)
	p.Stall(false)

	natstest.WaitClosed(t, m.Done(), 10*time.Second, "Close finished")
	require.ErrorIs(t, natstest.Recv(t, errc, 5*time.Second, "the acquisition ends"), kvlease.ErrClosed)
	_, held, err := other.Holder(ctx, "landing")
	require.NoError(t, err)
	require.False(t, held, "the lease won during Close was given back before Done")
}

// A write after Close is refused with ErrClosed, a known failure: the
// closed bucket sent nothing. It used to surface as the bucket's internal
// error, counted as an outcome unknown.
func TestForceReleaseAfterCloseIsErrClosed(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	holder := bind(t, jobs, newManager(t, n.JS, kvlease.Config{Holder: "two"}))
	g, ok, err := holder.TryAcquire(ctx, "kept", 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	m, err := kvlease.NewManager(ctx, n.NewJS(t), kvlease.Config{Holder: "one"})
	require.NoError(t, err)
	l := bind(t, jobs, m)
	require.NoError(t, m.Close(ctx))

	_, err = l.ForceRelease(ctx, "kept")
	require.ErrorIs(t, err, kvlease.ErrClosed)
	require.NoError(t, g.Renew(ctx), "the refused delete was not sent")
}

// A ticket drawn after Close is refused with ErrClosed, as every other
// write is: it used to surface as kvx's internal closed error, which
// matched no kvlease sentinel.
func TestTicketAfterCloseIsErrClosed(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	m, err := kvlease.NewManager(ctx, n.NewJS(t), kvlease.Config{Holder: "one"})
	require.NoError(t, err)
	_, err = m.Ticket(ctx, "queue.tickets")
	require.NoError(t, err)
	require.NoError(t, m.Close(ctx))

	_, err = m.Ticket(ctx, "queue.tickets")
	require.ErrorIs(t, err, kvlease.ErrClosed)
	require.False(t, kvx.OutcomeUnknown(err), "refused, never sent: %v", err)
}
