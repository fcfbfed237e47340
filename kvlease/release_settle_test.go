package kvlease_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// staleLeader answers every publish to bucket's keys at once with the
// refusal a deposed stream leader sends from its stale state ("wrong last
// sequence"), while the real leader goes on storing them. Right after a
// partition heals, the deposed leader still holds the stream's
// subscriptions and its refusal, which needs no quorum, is the first
// answer a client sees (TestPartitions, leader isolation).
func staleLeader(t *testing.T, nc *nats.Conn, bucket string) *nats.Subscription {
	t.Helper()
	sub, err := nc.Subscribe("$KV."+bucket+".>", func(m *nats.Msg) {
		_ = m.Respond([]byte(`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 1"}}`))
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return sub
}

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
		sub := staleLeader(t, c.JS.Conn(), cfg.Bucket)
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
	staleLeader(t, c.JS.Conn(), cfg.Bucket)
	require.ErrorIs(t, g.Release(ctx), kvlease.ErrLost)
}

// A TryAcquire whose creates are all refused while the key reads free (a
// stream leader cut off in a minority answers so, from its own state)
// fails with an error; it never answers "held" (the partition soak saw a
// client told "held" for seconds while the majority had the key free).
func TestAcquireRefusedWhileFreeIsAnErrorNotContention(t *testing.T) {
	n := natstest.WithServer(t)
	m := newManager(t, n.JS, kvlease.Config{Bucket: "leases_unsettled"})
	ctx := natstest.Context(t, 30*time.Second)
	stream := embedded.KVStreamName(m.Bucket())
	s, err := n.JS.Stream(ctx, stream)
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.Subjects = []string{"$KV." + m.Bucket() + ".other.>"} // the stream stores none of the key's writes
	_, err = n.JS.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	staleLeader(t, n.NC, m.Bucket())

	g, ok, err := m.TryAcquireKey(ctx, "k", 5*time.Second)
	require.Error(t, err)
	require.ErrorIs(t, err, kvx.ErrUnsettled)
	require.False(t, ok)
	require.Nil(t, g)
	require.Zero(t, m.Stats().Contended, "not counted as contention")
}
