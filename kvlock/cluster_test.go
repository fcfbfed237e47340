package kvlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
)

// The compare-and-set paths on an R3 bucket, where conflicts come back as
// 10071 or 10164 and reads must go to the stream leader.
func TestClusterR3CASPaths(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := natstest.WithCluster(t, 3)
	ctx := natstest.Context(t, 40*time.Second)
	cfg := kvlock.Config{Bucket: "locks_r3", Replicas: 3, TTL: 2 * time.Second}
	a := newLocker(t, c.JS, cfg)
	b := newLocker(t, c.NewJS(t), cfg)

	k1, ok, err := a.TryAcquire(ctx, "r3")
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = b.TryAcquire(ctx, "r3")
	require.NoError(t, err)
	require.False(t, ok, "a conflict is contention, not an error")
	require.NoError(t, k1.Renew(ctx))

	lk, _ := a.LeaseKey("r3")
	_, err = b.Manager().ForceReleaseKey(ctx, lk)
	require.NoError(t, err)
	k2, err := b.Acquire(ctx, "r3")
	require.NoError(t, err)
	require.Greater(t, k2.Token(), k1.Token())
	require.ErrorIs(t, k1.Release(ctx), kvlock.ErrLost, "late release refused")
	require.NoError(t, k2.Err())

	// Election records are guarded writes; reads come from the leader.
	ea, err := kvlock.NewElection(a, "r3")
	require.NoError(t, err)
	eb, err := kvlock.NewElection(b, "r3")
	require.NoError(t, err)
	require.NoError(t, ea.Campaign(ctx, "a"))
	info, err := eb.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, "a", info.Value)
	require.NoError(t, ea.Proclaim(ctx, "a2"))
	info, err = eb.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, "a2", info.Value)
	won := make(chan struct{})
	go func() {
		if assertNoErr(t, eb.Campaign(ctx, "b")) {
			close(won)
		}
	}()
	require.NoError(t, ea.Resign(ctx))
	natstest.WaitClosed(t, won, 10*time.Second, "b elected")
	require.NoError(t, k2.Release(ctx))

	// A fair queue on R3: waiters on their own connections (so their
	// queue views may be served by different replicas) are served in
	// arrival order.
	fcfg := cfg
	fcfg.Fair = true
	fa := newLocker(t, c.JS, fcfg)
	h, err := fa.Acquire(ctx, "fq")
	require.NoError(t, err)
	const waiters = 3
	order := make(chan int, waiters)
	for i := range waiters {
		fl := newLocker(t, c.NewJS(t), fcfg)
		go func() {
			k, err := fl.Acquire(ctx, "fq")
			if assertNoErr(t, err) {
				// Sent while holding the lock: the next waiter acquires
				// only after our release, so the sends are in acquisition
				// order. A send after Release raced the next waiter's
				// whole acquire and release on a loaded machine.
				order <- i
				assertNoErr(t, k.Release(ctx))
			}
		}()
		// A waiter's first write on its own connection may wait for a
		// watch whose consumer the meta leader creates: over 5 s on a
		// loaded CI machine, so the bound leaves room for two tries.
		natstest.Eventually(t, 30*time.Second, func() bool { return fl.Stats().Lease.Active == 1 }, "waiter %d queued", i)
	}
	require.NoError(t, h.Release(ctx))
	for i := range waiters {
		require.Equal(t, i, natstest.Recv(t, order, 10*time.Second, "fair waiter on R3"))
	}
	require.NoError(t, eb.Resign(ctx))
}
