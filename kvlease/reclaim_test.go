package kvlease_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// A guard whose recorded revision is not the stored one (a write stored
// at an unexpected revision under leader changes) must not report loss
// while the stored lease still carries its owner hash: it adopts the
// stored revision for renewals, guarded writes and release.
func TestConflictOnOwnLeaseIsNotLoss(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 20*time.Second)

	g, ok, err := l1.TryAcquire(ctx, "own", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	stored := g.Revision()

	g.CorruptRevision(stored + 1000)
	require.NoError(t, g.Renew(ctx))
	require.Greater(t, g.Revision(), stored)
	require.EqualValues(t, 1, m1.Stats().Reclaimed)

	g.CorruptRevision(g.Revision() + 100)
	_, err = g.Proof().Put(ctx, "data.own", []byte("v"))
	require.NoError(t, err)
	require.EqualValues(t, 2, m1.Stats().Reclaimed)

	g.CorruptRevision(g.Revision() + 200)
	require.NoError(t, g.Release(ctx))
	require.ErrorIs(t, g.Err(), kvlease.ErrReleased)
	require.EqualValues(t, 3, m1.Stats().Reclaimed)

	// The release really freed the key.
	g2, ok, err := l2.TryAcquire(ctx, "own", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	// Someone else's lease is still loss, whatever revision we recorded.
	g3, ok, err := l1.TryAcquire(ctx, "other", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = l2.ForceRelease(ctx, "other")
	require.NoError(t, err)
	g4, ok, err := l2.TryAcquire(ctx, "other", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	g3.CorruptRevision(g4.Revision() + 7)
	require.ErrorIs(t, g3.Renew(ctx), kvlease.ErrLost)
	require.NoError(t, g4.Release(ctx))
	require.NoError(t, g2.Release(ctx))
}
