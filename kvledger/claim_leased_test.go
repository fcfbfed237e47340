package kvledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// A claim names the claimant's lease; a claimant that lost the race for
// a pending record gets ErrLeaseActive instead of taking the winner's
// live claim over; taking over the claim the caller saw writes the new
// claimant's lease, and the outcome clears it.
func TestClaimLeasedNamesTheLease(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	led, err := kvledger.New(newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "leased"}))
	require.NoError(t, err)
	m, err := kvlease.NewManager(ctx, n.JS, kvlease.Config{Bucket: "leased_leases"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	gA, ok, err := m.TryAcquireKey(ctx, "kvledger.leased.w.A", 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	gB, ok, err := m.TryAcquireKey(ctx, "kvledger.leased.w.B", 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	ok, err = led.Admit(ctx, "test", "k", 1, nil, t0)
	require.NoError(t, err)
	require.True(t, ok)
	pending, _, err := led.State(ctx, "k")
	require.NoError(t, err)

	a, err := led.ClaimLeasedFrom(ctx, "A", pending, "A", gA, 0, time.Now())
	require.NoError(t, err)
	require.Equal(t, gA.Key(), a.Lease)
	_, err = led.ClaimLeasedFrom(ctx, "B", pending, "B", gB, 0, time.Now())
	require.ErrorIs(t, err, kvledger.ErrLeaseActive, "B saw it pending: A's claim is live as far as B knows")

	b, err := led.ClaimLeasedFrom(ctx, "B", a, "B", gB, 0, time.Now())
	require.NoError(t, err, "B judged A's claim (its lease) ended")
	require.Equal(t, kvledger.TakenOverEvent, b.LastEvent)
	require.Equal(t, gB.Key(), b.Lease)
	require.Greater(t, b.Fence, a.Fence)

	done, err := led.Finish(ctx, "B", "k", "B", b.Fence, kvledger.Outcome{Status: kvledger.StatusCompleted}, time.Now())
	require.NoError(t, err)
	require.Empty(t, done.Lease)
	require.Error(t, kvledger.TaskState{Key: "x", Status: kvledger.StatusPending, Lease: "l"}.Validate(), "a lease on a pending record")
}
