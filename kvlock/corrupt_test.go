package kvlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvlock"
)

// A lock whose lease key holds garbage fails with kvlease's corrupt-value
// sentinel: TryAcquire does not report it held, and Hold does not hang.
func TestCorruptLockValue(t *testing.T) {
	n := natstest.WithServer(t)
	l := newLocker(t, n.JS, kvlock.Config{})
	ctx := natstest.Context(t, 30*time.Second)
	key, err := l.LeaseKey("job")
	require.NoError(t, err)
	kv, err := n.JS.KeyValue(ctx, l.Manager().Bucket())
	require.NoError(t, err)
	_, err = kv.Put(ctx, key, []byte("garbage"))
	require.NoError(t, err)

	_, ok, err := l.TryAcquire(ctx, "job")
	require.ErrorIs(t, err, kvlease.ErrCorruptValue)
	require.False(t, ok)
	_, release, err := l.Hold(natstest.Context(t, 10*time.Second), "job")
	require.ErrorIs(t, err, kvlease.ErrCorruptValue)
	require.Nil(t, release)

	removed, err := l.Manager().ForceReleaseKey(ctx, key)
	require.NoError(t, err)
	require.True(t, removed)
	k, ok, err := l.TryAcquire(ctx, "job")
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, k.Release(ctx))
}
