package kvlease_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// holderAndWaiter: a holds "h.lock"; b holds the queue entry "h.q.1",
// whose stored value it returns.
func holderAndWaiter(t *testing.T, ctx context.Context, a, b *kvlease.Manager) (*kvlease.Guard, *kvlease.Guard, []byte) {
	t.Helper()
	g, ok, err := a.TryAcquireKey(ctx, "h.lock", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	entry, ok, err := b.TryAcquireKeyDetached(ctx, "h.q.1", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	value, rev, ok, err := b.ReadKey(ctx, "h.q.1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, entry.Revision(), rev)
	return g, entry, value
}

// TestHandOverAdopt: a holder hands its lease to a waiter's queue entry in
// one compare-and-set; the waiter adopts it without a write, with a fence
// above the holder's and the entry's secret, and releases it normally.
func TestHandOverAdopt(t *testing.T) {
	a, b := pair(t)
	ctx := natstest.Context(t, 20*time.Second)
	g, entry, value := holderAndWaiter(t, ctx, a, b)

	handed, err := g.HandOver(ctx, value)
	require.NoError(t, err)
	require.True(t, handed)
	require.ErrorIs(t, g.Err(), kvlease.ErrReleased)
	require.EqualValues(t, 1, a.Stats().HandedOver)

	h, ok, err := b.HolderOfKey(ctx, "h.lock")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, entry.Owns(h), "the lock names the entry's owner")
	require.True(t, kvlease.HandedTo(value, entry))
	writes := b.Stats().Attempts
	adopted, err := b.Adopt(ctx, entry, "h.lock", h.Revision)
	require.NoError(t, err)
	require.Equal(t, writes, b.Stats().Attempts, "adopting writes nothing")
	require.Equal(t, h.Revision, adopted.Fence())
	require.Greater(t, adopted.Fence(), g.Fence())
	require.NoError(t, adopted.Err())
	require.False(t, adopted.ValidUntil().After(time.Now().Add(5*time.Second)), "window from the entry's first write")
	require.NoError(t, adopted.Renew(ctx), "the adopter owns the key")
	require.NoError(t, entry.Release(ctx))
	require.NoError(t, adopted.Release(ctx))
	_, ok, err = b.HolderOfKey(ctx, "h.lock")
	require.NoError(t, err)
	require.False(t, ok)
}

// TestHandOverOfLostLeaseIsLoss: a hand-over of a lease taken over
// meanwhile writes nothing and reports ErrLost, like Release.
func TestHandOverOfLostLeaseIsLoss(t *testing.T) {
	a, b := pair(t)
	ctx := natstest.Context(t, 20*time.Second)
	g, entry, value := holderAndWaiter(t, ctx, a, b)
	forced, err := b.ForceReleaseKey(ctx, "h.lock")
	require.NoError(t, err)
	require.True(t, forced)
	other, ok, err := b.TryAcquireKey(ctx, "h.lock", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	handed, err := g.HandOver(ctx, value)
	require.False(t, handed)
	require.ErrorIs(t, err, kvlease.ErrLost)
	h, ok, err := b.HolderOfKey(ctx, "h.lock")
	require.NoError(t, err)
	require.True(t, ok)
	require.False(t, entry.Owns(h), "the new holder's lease is untouched")
	require.NoError(t, other.Err())
	require.NoError(t, other.Release(ctx))
	require.NoError(t, entry.Release(ctx))
}
