package kvlease_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// Writes answered only by a stream leader cut off in a minority
// (natstest.CutOff) are unknown outcomes, never contention or loss.

// A TryAcquire whose creates are all refused while the key reads free (a
// stream leader cut off in a minority answers so, from its own state)
// fails with an error; it never answers "held" (the partition soak saw a
// client told "held" for seconds while the majority had the key free).
func TestAcquireRefusedWhileFreeIsAnErrorNotContention(t *testing.T) {
	n := natstest.WithServer(t)
	m := newManager(t, n.JS, kvlease.Config{Bucket: "leases_unsettled"})
	ctx := natstest.Context(t, 30*time.Second)
	natstest.CutOff(t, n, m.Bucket())

	g, ok, err := m.TryAcquireKey(ctx, "k", 5*time.Second)
	require.Error(t, err)
	require.ErrorIs(t, err, kvx.ErrUnsettled)
	require.False(t, ok)
	require.Nil(t, g)
	require.Zero(t, m.Stats().Contended, "not counted as contention")
}

// A renewal refused every time while the lease still carries its owner
// is an error of unknown outcome, not loss: the guard stays valid (its
// validity window, not the refusal, ends it).
func TestRenewRefusedWhileStillOursIsNotLoss(t *testing.T) {
	n := natstest.WithServer(t)
	m := newManager(t, n.JS, kvlease.Config{Bucket: "leases_renew_unsettled"})
	ctx := natstest.Context(t, 30*time.Second)
	g, ok, err := m.TryAcquireKey(ctx, "k", 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	heal := natstest.CutOff(t, n, m.Bucket())

	err = g.Renew(ctx)
	require.Error(t, err)
	require.ErrorIs(t, err, kvx.ErrUnsettled)
	require.NotErrorIs(t, err, kvlease.ErrLost)
	require.NoError(t, g.Err(), "the guard was not lost")

	heal()
	require.NoError(t, g.Renew(ctx), "the lease renews once the answers are the cluster's again")
	require.NoError(t, g.Release(ctx))
}

// A restore whose write is refused every time while the lease still
// carries the token's owner is an unknown outcome, not loss: the token
// stays good, and restores once the answers are the cluster's again.
func TestRestoreRefusedWhileStillTheTokensIsNotLoss(t *testing.T) {
	n := natstest.WithServer(t)
	m := newManager(t, n.JS, kvlease.Config{Bucket: "leases_restore_unsettled"})
	l := bind(t, jobs, m)
	ctx := natstest.Context(t, 30*time.Second)
	g, ok, err := l.TryAcquire(ctx, "k", 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	tok, err := l.Export(g)
	require.NoError(t, err)
	heal := natstest.CutOff(t, n, m.Bucket())

	_, err = l.Restore(ctx, tok)
	require.Error(t, err)
	require.ErrorIs(t, err, kvx.ErrUnsettled)
	require.NotErrorIs(t, err, kvlease.ErrLost)

	heal()
	g2, err := l.Restore(ctx, tok)
	require.NoError(t, err, "the token was not used up")
	require.NoError(t, g2.Release(ctx))
}
