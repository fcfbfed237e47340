package kvlease_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// A Release whose ctx ends while its delete is in flight returns at once;
// the manager settles the delete, so the key is freed all the same and the
// guard's Done closes.
func TestReleaseCtxEndsMidDelete(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 20*time.Second)

	for i := range 5 {
		g, ok, err := l1.TryAcquire(ctx, "mid-delete", 5*time.Second)
		require.NoError(t, err)
		require.True(t, ok, "round %d", i)

		// The guard's context ends before the delete is sent; cancelling
		// the release's ctx from there ends the wait with the delete
		// not yet answered (or, on some rounds, not yet sent).
		rctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(g.Context(), cancel)
		err = g.Release(rctx)
		stop()
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.Canceled)
		}
		natstest.WaitClosed(t, g.Done(), 10*time.Second, "settled release")
		require.NoError(t, g.Release(context.Background()), "the settled release's result")
		require.ErrorIs(t, g.Err(), kvlease.ErrReleased)

		// Freed for everyone, not only for m1's hint cache.
		g2, ok, err := l2.TryAcquire(ctx, "mid-delete", 5*time.Second)
		require.NoError(t, err)
		require.True(t, ok, "round %d: key not freed", i)
		require.NoError(t, g2.Release(ctx))
	}
}

// A cancellable ctx that stays live releases inline with the result of
// the delete.
func TestReleaseCancellableCtx(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 20*time.Second)

	g, ok, err := l1.TryAcquire(ctx, "cancellable", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, g.Release(ctx))
	natstest.WaitClosed(t, g.Done(), time.Second, "done after Release returned")

	// Released after being taken over: ErrLost.
	g, ok, err = l1.TryAcquire(ctx, "cancellable", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	forced, err := l2.ForceRelease(ctx, "cancellable")
	require.NoError(t, err)
	require.True(t, forced)
	g2, ok, err := l2.TryAcquire(ctx, "cancellable", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.ErrorIs(t, g.Release(ctx), kvlease.ErrLost)
	require.NoError(t, g2.Release(ctx))
}
