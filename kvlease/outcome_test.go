package kvlease_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// An acquisition whose publish lands but whose answer comes too late
// (outcome unknown) is settled by reading the key: the lease is ours, at
// the revision that landed, and nobody else can take it meanwhile. The
// caller's ctx has ended by then, so the guard ends at once with
// ErrReleased and frees the key.
func TestAcquireOutcomeUnknownLanded(t *testing.T) {
	n := natstest.WithServer(t)
	p := natstest.NewDelayProxy(t, n.Server.ClientURL())
	nc, err := nats.Connect(p.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	slow := newManager(t, natstest.JetStream(t, nc), kvlease.Config{Holder: "slow"})
	other := newManager(t, n.JS, kvlease.Config{Holder: "other"})
	ls, lo := bind(t, jobs, slow), bind(t, jobs, other)
	ctx := natstest.Context(t, 20*time.Second)

	p.SetDelay(600 * time.Millisecond)
	actx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	g, ok, err := ls.TryAcquire(actx, "unknown", 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the write landed: the lease is ours")
	require.NotZero(t, g.Fence())

	// Until the guard's release lands, the key is held by the slow
	// manager at the revision that landed.
	h, held, err := lo.Holder(ctx, "unknown")
	require.NoError(t, err)
	if held {
		require.Equal(t, "slow", h.ID)
		require.Equal(t, g.Fence(), h.Revision)
	}
	p.SetDelay(0)
	natstest.WaitClosed(t, g.Done(), 10*time.Second, "guard of an expired ctx released")
	require.ErrorIs(t, g.Err(), kvlease.ErrReleased)
	g2, ok, err := lo.TryAcquire(ctx, "unknown", 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "released: free for the other manager")
	require.Greater(t, g2.Fence(), g.Fence())
	require.NoError(t, g2.Release(ctx))
}

// An acquisition whose ctx has already ended sends nothing and holds
// nothing.
func TestAcquireWithEndedCtx(t *testing.T) {
	n := natstest.WithServer(t)
	m := newManager(t, n.JS, kvlease.Config{})
	l := bind(t, jobs, m)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	_, ok, err := l.TryAcquire(ctx, "never", 10*time.Second)
	require.Error(t, err)
	require.False(t, ok)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Zero(t, m.Stats().Active)
}
