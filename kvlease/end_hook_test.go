package kvlease_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// AfterEnd hooks run once the guard ends, with its context cancelled and
// its cause set; a stopped hook never runs; a hook added after the end
// runs at once.
func TestAfterEnd(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 20*time.Second)

	g, ok, err := l1.TryAcquire(ctx, "hooks", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	causes := make(chan error, 3)
	var stoppedRan atomic.Bool
	g.AfterEnd(func() { causes <- context.Cause(g.Context()) })
	stopped := g.AfterEnd(func() { stoppedRan.Store(true) })
	require.True(t, stopped())
	require.False(t, stopped(), "stop twice")
	g.AfterEnd(func() { causes <- context.Cause(g.Context()) })

	// Lost: taken over by force.
	forced, err := l2.ForceRelease(ctx, "hooks")
	require.NoError(t, err)
	require.True(t, forced)
	require.ErrorIs(t, g.Renew(ctx), kvlease.ErrLost)
	require.ErrorIs(t, natstest.Recv(t, causes, 5*time.Second, "first hook"), kvlease.ErrLost)
	require.ErrorIs(t, natstest.Recv(t, causes, 5*time.Second, "second hook"), kvlease.ErrLost)

	late := g.AfterEnd(func() { causes <- context.Cause(g.Context()) })
	require.ErrorIs(t, natstest.Recv(t, causes, 5*time.Second, "late hook"), kvlease.ErrLost)
	require.False(t, late())
	require.False(t, stoppedRan.Load())

	// Released: the hook's stop after Release reports it already started.
	g, ok, err = l1.TryAcquire(ctx, "hooks", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	stop := g.AfterEnd(func() { causes <- context.Cause(g.Context()) })
	require.NoError(t, g.Release(ctx))
	require.ErrorIs(t, natstest.Recv(t, causes, 5*time.Second, "release hook"), kvlease.ErrReleased)
	require.False(t, stop())
}
