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

// cutOff makes bucket behave as a stream leader cut off in a minority:
// the stream stores none of its keys' writes any more (reads still answer
// what it holds) and every write is refused at once. heal undoes it.
func cutOff(t *testing.T, n *natstest.Node, bucket string) (heal func()) {
	t.Helper()
	ctx := natstest.Context(t, 10*time.Second)
	s, err := n.JS.Stream(ctx, embedded.KVStreamName(bucket))
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	subjects := cfg.Subjects
	cfg.Subjects = []string{"$KV." + bucket + ".other.>"}
	_, err = n.JS.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	sub := staleLeader(t, n.NC, bucket)
	return func() {
		require.NoError(t, sub.Unsubscribe())
		cfg.Subjects = subjects
		_, err := n.JS.UpdateStream(ctx, cfg)
		require.NoError(t, err)
	}
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
	heal := cutOff(t, n, m.Bucket())

	err = g.Renew(ctx)
	require.Error(t, err)
	require.ErrorIs(t, err, kvx.ErrUnsettled)
	require.NotErrorIs(t, err, kvlease.ErrLost)
	require.NoError(t, g.Err(), "the guard was not lost")

	heal()
	require.NoError(t, g.Renew(ctx), "the lease renews once the answers are the cluster's again")
	require.NoError(t, g.Release(ctx))
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
	cutOff(t, n, m.Bucket())

	g, ok, err := m.TryAcquireKey(ctx, "k", 5*time.Second)
	require.Error(t, err)
	require.ErrorIs(t, err, kvx.ErrUnsettled)
	require.False(t, ok)
	require.Nil(t, g)
	require.Zero(t, m.Stats().Contended, "not counted as contention")
}
