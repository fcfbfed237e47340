package kvlease_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// TestReleaseRefusedByStaleLeaderIsNotLoss: a release whose delete landed
// while the first answer was a stale refusal reports success, and the key
// is free; a release refused because another writer deleted the lease is
// still ErrLost.
func TestReleaseRefusedByStaleLeaderIsNotLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := natstest.WithCluster(t, 3)
	cfg := kvlease.Config{Bucket: "leases_stale", Replicas: 3}
	m1 := newManager(t, c.JS, cfg)
	m2 := newManager(t, c.NewJS(t), cfg)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 60*time.Second)

	for i := range 5 {
		g, ok, err := l1.TryAcquire(ctx, "k", 30*time.Second)
		require.NoError(t, err)
		require.True(t, ok)
		sub := natstest.RefuseWrites(t, c.JS.Conn(), "$KV."+cfg.Bucket+".>")
		require.NoError(t, g.Release(ctx), "round %d: a refusal that is not the leader's is not loss", i)
		require.NoError(t, sub.Unsubscribe())
		_, held, err := l2.Holder(ctx, "k")
		require.NoError(t, err)
		require.False(t, held, "round %d: the release landed", i)
	}
	require.Positive(t, m1.Stats().Reclaimed, "refusals were overturned (the real answer may come first now and then)")

	// A real loss under the same stale refusals: force-released, then released.
	g, ok, err := l1.TryAcquire(ctx, "k", 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	forced, err := l2.ForceRelease(ctx, "k")
	require.NoError(t, err)
	require.True(t, forced)
	natstest.RefuseWrites(t, c.JS.Conn(), "$KV."+cfg.Bucket+".>")
	require.ErrorIs(t, g.Release(ctx), kvlease.ErrLost)
}
