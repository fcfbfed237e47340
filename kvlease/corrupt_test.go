package kvlease_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// A lease key holding garbage (as `nats kv put` leaves it) is an error of
// its own from acquisition, waiting included, and ForceRelease removes it.
func TestCorruptLeaseValue(t *testing.T) {
	n := natstest.WithServer(t)
	m := newManager(t, n.JS, kvlease.Config{})
	l := bind(t, jobs, m)
	ctx := natstest.Context(t, 30*time.Second)
	key, err := l.LeaseKey("bad")
	require.NoError(t, err)
	kv, err := n.JS.KeyValue(ctx, m.Bucket())
	require.NoError(t, err)

	for _, v := range []string{"not json", `{"owner":7}`, `{}`, `[]`, "\xff\x00"} {
		_, err := kv.Put(ctx, key, []byte(v))
		require.NoError(t, err)

		g, ok, err := l.TryAcquire(ctx, "bad", time.Second)
		require.ErrorIs(t, err, kvlease.ErrCorruptValue, "%q", v)
		require.False(t, ok)
		require.Nil(t, g)
		_, held, err := l.Holder(ctx, "bad")
		require.ErrorIs(t, err, kvlease.ErrCorruptValue)
		require.True(t, held)

		// A waiter does not wait for a holder that does not exist.
		start := time.Now()
		_, ok, err = l.Acquire(ctx, "bad", time.Second, 10*time.Second)
		require.ErrorIs(t, err, kvlease.ErrCorruptValue, "%q", v)
		require.False(t, ok)
		require.Less(t, time.Since(start), 5*time.Second)

		e, err := kv.Get(ctx, key)
		require.NoError(t, err)
		require.Equal(t, v, string(e.Value()), "never overwritten by an acquisition")

		removed, err := l.ForceRelease(ctx, "bad")
		require.NoError(t, err)
		require.True(t, removed)
		g, ok, err = l.TryAcquire(ctx, "bad", time.Second)
		require.NoError(t, err)
		require.True(t, ok, "free again after ForceRelease")
		require.NoError(t, g.Release(ctx))
	}
}
