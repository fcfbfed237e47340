package kvlease_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

func TestGuardedWriteRejectedAfterLoss(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 20*time.Second)

	g, ok, err := l1.TryAcquire(ctx, "owner", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	p := g.Proof()
	r1, err := p.Put(ctx, "data.owner", []byte("v1"))
	require.NoError(t, err)
	require.NoError(t, g.Renew(ctx), "a renewal moves the revision")
	r2, err := p.Put(ctx, "data.owner", []byte("v2"))
	require.NoError(t, err, "the proof follows the guard's current revision")
	require.Greater(t, r2, r1)

	// Another process breaks the lease and takes it.
	_, err = l2.ForceRelease(ctx, "owner")
	require.NoError(t, err)
	g2, ok, err := l2.TryAcquire(ctx, "owner", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	_, err = p.Put(ctx, "data.owner", []byte("stale"))
	require.ErrorIs(t, err, kvlease.ErrLost)
	require.ErrorIs(t, g.Err(), kvlease.ErrLost)
	v, rev, ok, err := g2.Proof().Get(ctx, "data.owner")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "v2", string(v), "the refused write wrote nothing")
	require.Equal(t, r2, rev)

	// Keys inside a lease family are refused.
	_, err = g2.Proof().Put(ctx, "jobs.x", []byte("no"))
	require.ErrorIs(t, err, kvlease.ErrInvalidKey)
	_, err = g2.Proof().Put(ctx, "bad key", []byte("no"))
	require.ErrorIs(t, err, kvlease.ErrInvalidKey)
	_, err = kvlease.Proof{}.Put(ctx, "data.x", nil)
	require.ErrorIs(t, err, kvlease.ErrForeignGuard)
	require.NoError(t, g2.Release(ctx))
}
