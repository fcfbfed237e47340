package kvlease_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// TestCASPathsOnR3 runs acquire, renew, release, force release and restore
// against an R3 bucket on a 3-node cluster, where conflicts arrive as API
// error 10071 or 10164 and reads must come from the stream leader.
func TestCASPathsOnR3(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := natstest.WithCluster(t, 3)
	cfg := kvlease.Config{Bucket: "leases_r3", Replicas: 3}
	m1 := newManager(t, c.JS, cfg)
	m2 := newManager(t, c.NewJS(t), cfg)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 60*time.Second)

	// acquire + contention
	g1, ok, err := l1.TryAcquire(ctx, "k", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = l2.TryAcquire(ctx, "k", 5*time.Second)
	require.NoError(t, err, "a conflict on R3 is contention, not an error")
	require.False(t, ok)

	// renew, then a stale renewal is loss
	require.NoError(t, g1.Renew(ctx))
	forced, err := l2.ForceRelease(ctx, "k")
	require.NoError(t, err)
	require.True(t, forced)
	require.ErrorIs(t, g1.Renew(ctx), kvlease.ErrLost)

	// release after re-acquire (one publish on the remembered marker)
	g2, ok, err := l2.TryAcquire(ctx, "k", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, g1.Release(ctx), "a lost guard releases nothing")
	require.NoError(t, g2.Release(ctx))
	g3, ok, err := l2.TryAcquire(ctx, "k", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.Greater(t, g3.Fence(), g2.Fence())

	// wait woken by release
	got := make(chan *kvlease.Guard, 1)
	go func() {
		g, ok, err := l1.Acquire(ctx, "k", 5*time.Second, 10*time.Second)
		if err != nil || !ok {
			t.Errorf("acquire: ok=%v err=%v", ok, err)
		}
		got <- g
	}()
	natstest.Eventually(t, 5*time.Second, func() bool { return m1.Stats().Contended >= 2 }, "waiting")
	require.NoError(t, g3.Release(ctx))
	g4 := natstest.Recv(t, got, 10*time.Second, "woken waiter")
	require.NotNil(t, g4)

	// export / restore, second restore fails
	tok, err := l1.Export(g4)
	require.NoError(t, err)
	g5, err := l2.Restore(ctx, tok)
	require.NoError(t, err)
	_, err = l2.Restore(ctx, tok)
	require.ErrorIs(t, err, kvlease.ErrLost)

	// guarded write then loss
	_, err = g5.Proof().Put(ctx, "data.k", []byte("1"))
	require.NoError(t, err)
	_, err = l1.ForceRelease(ctx, "k")
	require.NoError(t, err)
	_, err = g5.Proof().Put(ctx, "data.k", []byte("2"))
	require.ErrorIs(t, err, kvlease.ErrLost)

	// auto-renewal on R3
	ran, err := l1.With(ctx, "auto", time.Second, 0, func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(1500 * time.Millisecond):
			return nil
		}
	})
	require.True(t, ran)
	require.NoError(t, err)
}
