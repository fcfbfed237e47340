package kvledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// A runtime claim (one that names a renewed lease) whose LeaseUntil has
// passed is live while its lease is: Claim, Takeover, ClaimIfReady and
// ClaimNext refuse it, with or without a lease reader, and ClaimLease
// shows the server's expiry, later than LeaseUntil. Once the lease ends,
// Takeover takes it at once.
func TestTakeoverWaitsForTheNamedLeaseOnTheServer(t *testing.T) {
	t.Run("R1", func(t *testing.T) { takeoverWaitsForTheNamedLease(t, natstest.WithServer(t).JS, 1) })
	t.Run("R3", func(t *testing.T) { takeoverWaitsForTheNamedLease(t, natstest.WithCluster(t, 3).JS, 3) })
}

func takeoverWaitsForTheNamedLease(t *testing.T, js jetstream.JetStream, replicas int) {
	ctx := natstest.Context(t, 60*time.Second)
	store := newKVStore(t, js, kvledger.KVStoreConfig{Bucket: "judged", Replicas: replicas})
	var (
		m   *kvlease.Manager
		err error
	)
	natstest.Eventually(t, 20*time.Second, func() bool {
		m, err = kvlease.NewManager(ctx, js, kvlease.Config{Bucket: "judged_leases", Replicas: replicas})
		return err == nil
	}, "lease bucket")
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	runtime, err := kvledger.New(store)
	require.NoError(t, err)
	judge, err := kvledger.New(store, kvledger.WithLeases(m))
	require.NoError(t, err)
	_, err = kvledger.New(store, kvledger.WithLeases(nil))
	require.ErrorIs(t, err, kvledger.ErrInvalidConfig)

	g, ok, err := m.TryAcquireKey(ctx, "kvledger.judged.w.A", 3*time.Second) // renewed every second: a loaded machine keeps it
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, g.StartRenewing(0))
	ok, err = runtime.Admit(ctx, "test", "k", 1, nil, time.Now())
	require.NoError(t, err)
	require.True(t, ok)
	claimed, err := runtime.ClaimLeased(ctx, "A", "k", "A", g, time.Now())
	require.NoError(t, err)

	natstest.Eventually(t, 10*time.Second, func() bool { return time.Now().After(claimed.LeaseUntil.Add(500 * time.Millisecond)) },
		"the record's LeaseUntil has passed")
	require.NoError(t, g.Err(), "the claimant renews its lease")
	for _, l := range []*kvledger.Ledger{runtime, judge} {
		_, err = l.Takeover(ctx, "intruder", "k", "intruder", time.Minute, time.Now())
		require.ErrorIs(t, err, kvledger.ErrNotStale)
		_, err = l.Claim(ctx, "intruder", "k", "intruder", time.Minute, time.Now())
		require.ErrorIs(t, err, kvledger.ErrLeaseActive)
		_, err = l.ClaimIfReady(ctx, "intruder", "k", "intruder", time.Minute, time.Now())
		require.ErrorIs(t, err, kvledger.ErrLeaseActive)
		_, err = l.ClaimNext(ctx, "intruder", "intruder", time.Minute, time.Now())
		require.ErrorIs(t, err, kvledger.ErrNoReady)
	}
	h, held, named, err := judge.ClaimLease(ctx, claimed)
	require.NoError(t, err)
	require.True(t, named)
	require.True(t, held)
	require.True(t, h.Expires.After(claimed.LeaseUntil), "the lease, renewed, expires after the claim's LeaseUntil: %s vs %s", h.Expires, claimed.LeaseUntil)
	_, _, _, err = runtime.ClaimLease(ctx, claimed)
	require.ErrorIs(t, err, kvledger.ErrInvalidConfig, "no lease reader")

	require.NoError(t, g.Release(ctx))
	_, held, _, err = judge.ClaimLease(ctx, claimed)
	require.NoError(t, err)
	require.False(t, held)
	_, err = runtime.Takeover(ctx, "intruder", "k", "intruder", time.Minute, time.Now())
	require.ErrorIs(t, err, kvledger.ErrNotStale, "without a lease reader the end cannot be confirmed")
	fence, err := judge.Takeover(ctx, "intruder", "k", "intruder", time.Minute, time.Now())
	require.NoError(t, err, "the lease ended on the server")
	require.Greater(t, fence, claimed.Fence)
	rec, _, err := judge.State(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, kvledger.OwnerID("intruder"), rec.Owner)
	require.NotEqual(t, claimed.Lease, rec.Lease, "the new claim holds its own lease")
	_, held, _, err = judge.ClaimLease(ctx, rec)
	require.NoError(t, err)
	require.True(t, held)
}

// With a lease taker, Claim holds a lease that the server expires: the
// claim is not taken (Claim, Takeover) while it lives, also not once its
// LeaseUntil has passed on a clock that runs ahead; Renew names a new
// lease; once the server expired it, Takeover takes the claim.
func TestClaimHoldsALeaseTheServerExpires(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "held"})
	m, err := kvlease.NewManager(ctx, n.JS, kvlease.Config{Bucket: "held_leases"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	l, err := kvledger.New(store, kvledger.WithLeases(m))
	require.NoError(t, err)
	plain, err := kvledger.New(store)
	require.NoError(t, err)

	ok, err := l.Admit(ctx, "test", "r", 1, nil, time.Now())
	require.NoError(t, err)
	require.True(t, ok)
	_, err = l.Claim(ctx, "cli", "r", "cli", 500*time.Millisecond, time.Now())
	require.ErrorIs(t, err, kvledger.ErrInvalidLease, "below kvlease's MinTTL")
	fence, err := l.Claim(ctx, "cli", "r", "cli", 2*time.Second, time.Now())
	require.NoError(t, err)
	rec, _, err := l.State(ctx, "r")
	require.NoError(t, err)
	require.NotEmpty(t, rec.Lease)
	require.Contains(t, rec.Lease, "kvledger.held.w.")

	ahead := time.Now().Add(time.Hour) // a clock that says LeaseUntil passed
	_, err = l.Takeover(ctx, "other", "r", "other", time.Minute, ahead)
	require.ErrorIs(t, err, kvledger.ErrNotStale)
	_, err = plain.Takeover(ctx, "other", "r", "other", time.Minute, ahead)
	require.ErrorIs(t, err, kvledger.ErrNotStale)
	_, err = l.Claim(ctx, "other", "r", "other", time.Minute, ahead)
	require.ErrorIs(t, err, kvledger.ErrLeaseActive)

	require.ErrorIs(t, plain.Renew(ctx, "cli", "r", "cli", fence, time.Minute, time.Now()), kvledger.ErrNoLease)
	require.NoError(t, l.Renew(ctx, "cli", "r", "cli", fence, time.Second, time.Now()))
	renewed, _, err := l.State(ctx, "r")
	require.NoError(t, err)
	require.NotEqual(t, rec.Lease, renewed.Lease)

	natstest.Eventually(t, 15*time.Second, func() bool {
		_, held, _, err := l.ClaimLease(ctx, renewed)
		return err == nil && !held
	}, "the server expires the renewed lease")
	_, err = plain.Takeover(ctx, "other", "r", "other", time.Minute, time.Now())
	require.ErrorIs(t, err, kvledger.ErrNotStale, "no lease reader: the end cannot be confirmed")
	next, err := l.Takeover(ctx, "other", "r", "other", time.Minute, time.Now())
	require.NoError(t, err)
	require.Greater(t, next, fence)
	require.ErrorIs(t, l.Renew(ctx, "cli", "r", "cli", fence, time.Minute, time.Now()), kvledger.ErrFenced)
}
