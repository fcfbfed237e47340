package kvledger_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// liveLeaseKeys lists the keys the lease bucket holds now.
func liveLeaseKeys(t *testing.T, js jetstream.JetStream, bucket string) []string {
	t.Helper()
	ctx := natstest.Context(t, 5*time.Second)
	kv, err := js.KeyValue(ctx, bucket)
	require.NoError(t, err)
	lister, err := kv.ListKeys(ctx)
	require.NoError(t, err)
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	return keys
}

func leaseLedger(t *testing.T, js jetstream.JetStream, store kvledger.Store, bucket string) *kvledger.Ledger {
	t.Helper()
	m := natstest.Open(t, "lease manager", func(ctx context.Context) (*kvlease.Manager, error) {
		return kvlease.NewManager(ctx, js, kvlease.Config{Bucket: bucket})
	})
	t.Cleanup(func() { _ = m.Close(context.Background()) }) // after the Ledger's Close (cleanups run last first)
	return newLedger(t, store, kvledger.WithLeases(m))
}

// leaseFixture is a server, a KVStore on it, and a Ledger whose claims
// hold leases in the bucket leases, with keys admitted.
func leaseFixture(t *testing.T, leases string, keys ...kvledger.IdempotencyKey) (*natstest.Node, context.Context, *kvledger.KVStore, *kvledger.Ledger) {
	t.Helper()
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	l := leaseLedger(t, n.JS, store, leases)
	admitAll(t, ctx, l, keys...)
	return n, ctx, store, l
}

// admitAll admits each of keys, with no needs.
func admitAll(t *testing.T, ctx context.Context, l *kvledger.Ledger, keys ...kvledger.IdempotencyKey) {
	t.Helper()
	for _, k := range keys {
		ok, err := l.Admit(ctx, "test", k, 1, nil, time.Now())
		require.NoError(t, err)
		require.True(t, ok, string(k))
	}
}

// With WithLeases, a claim renewed N times holds one lease key, renewed in
// place: not one per renewal, each living out its TTL and each sent to
// every worker's lease watch. A renewal for another duration replaces the
// key and releases the old one.
func TestRenewKeepsOneLeaseKey(t *testing.T) {
	const leases = "renew_leases"
	n, ctx, _, l := leaseFixture(t, leases, "k")
	fence, err := l.Claim(ctx, "w", "k", "w", time.Hour, time.Now())
	require.NoError(t, err)
	claimed, _, err := l.State(ctx, "k")
	require.NoError(t, err)
	require.NotEmpty(t, claimed.Lease)
	for i := range 5 {
		require.NoError(t, l.Renew(ctx, "w", "k", "w", fence, time.Hour, time.Now()), "renewal %d", i)
	}
	renewed, _, err := l.State(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, claimed.Lease, renewed.Lease, "renewed in place")
	require.Equal(t, []string{claimed.Lease}, liveLeaseKeys(t, n.JS, leases))
	h, held, _, err := l.ClaimLease(ctx, renewed)
	require.NoError(t, err)
	require.True(t, held)
	require.Greater(t, h.Revision, uint64(1), "the key was written again")

	require.NoError(t, l.Renew(ctx, "w", "k", "w", fence, 2*time.Hour, time.Now()))
	longer, _, err := l.State(ctx, "k")
	require.NoError(t, err)
	require.NotEqual(t, claimed.Lease, longer.Lease, "another TTL: another key")
	require.Equal(t, []string{longer.Lease}, liveLeaseKeys(t, n.JS, leases), "the old key is released")

	require.NoError(t, l.Release(ctx, "w", "k", "w", fence, time.Now()))
	require.Empty(t, liveLeaseKeys(t, n.JS, leases), "a released claim's lease goes with it")

	fence, err = l.Claim(ctx, "w", "k", "w", time.Hour, time.Now())
	require.NoError(t, err)
	require.Len(t, liveLeaseKeys(t, n.JS, leases), 1)
	require.NoError(t, l.Complete(ctx, "w", "k", "w", fence, kvledger.StatusCompleted, time.Now()))
	require.Empty(t, liveLeaseKeys(t, n.JS, leases), "a completed claim's lease goes with it")
}

// A claim that fails after taking its lease releases it: here the record's
// need failed (the failing writer died before its walk blocked the
// dependents), so Claim and ClaimIfReady block the record instead.
func TestFailedClaimLeavesNoLease(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	const leases = "failed_claim_leases"
	plain := newLedger(t, store)
	for _, k := range []kvledger.IdempotencyKey{"root", "a", "b"} {
		var needs []kvledger.IdempotencyKey
		if k != "root" {
			needs = []kvledger.IdempotencyKey{"root"}
		}
		ok, err := plain.Admit(ctx, "test", k, 1, nil, time.Now(), needs...)
		require.NoError(t, err)
		require.True(t, ok)
	}
	fence, err := plain.Claim(ctx, "w", "root", "w", time.Minute, time.Now())
	require.NoError(t, err)
	died := errors.New("died before blocking the dependents")
	kvledger.SetAfterWriteHook(plain, func(kvledger.IdempotencyKey, kvledger.TaskState) error { return died })
	require.ErrorIs(t, plain.Complete(ctx, "w", "root", "w", fence, kvledger.StatusFailed, time.Now()), died)

	l := leaseLedger(t, n.JS, store, leases)
	_, err = l.Claim(ctx, "w", "a", "w", time.Minute, time.Now())
	require.ErrorIs(t, err, kvledger.ErrNotClaimed)
	_, err = l.ClaimIfReady(ctx, "w", "b", "w", time.Minute, time.Now())
	require.ErrorIs(t, err, kvledger.ErrNotClaimed)
	for _, k := range []kvledger.IdempotencyKey{"a", "b"} {
		s, _, err := l.State(ctx, k)
		require.NoError(t, err)
		require.Equal(t, kvledger.StatusBlocked, s.Status, fmt.Sprint(k))
	}
	require.Empty(t, liveLeaseKeys(t, n.JS, leases), "the failed claims' leases are released")
}

// A claim's lease outlives the Ledger and its lease manager by its TTL
// (the command line claims and exits): the Ledger abandons it once the
// claim is written, whether or not it is closed, and keeps only what
// renews it in place.
func TestClaimLeaseOutlivesItsManager(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	const leases = "outlive_leases"
	m := natstest.Open(t, "lease manager", func(ctx context.Context) (*kvlease.Manager, error) {
		return kvlease.NewManager(ctx, n.JS, kvlease.Config{Bucket: leases})
	})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	l, err := kvledger.New(store, kvledger.WithLeases(m))
	require.NoError(t, err)
	for _, k := range []kvledger.IdempotencyKey{"a", "b"} {
		ok, err := l.Admit(ctx, "test", k, 1, nil, time.Now())
		require.NoError(t, err)
		require.True(t, ok)
	}
	_, err = l.Claim(ctx, "w", "a", "w", time.Hour, time.Now())
	require.NoError(t, err)
	_, err = l.Claim(ctx, "w", "b", "w", time.Hour, time.Now())
	require.NoError(t, err)
	require.NoError(t, m.Close(ctx))
	require.Len(t, liveLeaseKeys(t, n.JS, leases), 2, "both claims' leases live on after the manager closed")
	other := newLedger(t, store, kvledger.WithLeases(leaseReader(t, n.JS, leases)))
	_, err = other.Takeover(ctx, "x", "a", "x", time.Minute, time.Now())
	require.ErrorIs(t, err, kvledger.ErrNotStale)
}

func leaseReader(t *testing.T, js jetstream.JetStream, bucket string) *kvlease.Manager {
	t.Helper()
	m := natstest.Open(t, "lease reader", func(ctx context.Context) (*kvlease.Manager, error) {
		return kvlease.NewManager(ctx, js, kvlease.Config{Bucket: bucket})
	})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

// failingWrites is a store whose writes fail, for a claim or renewal that
// fails after it took its lease.
type failingWrites struct {
	kvledger.Store
	err error
}

func (s failingWrites) CompareAndSwap(context.Context, kvledger.IdempotencyKey, kvledger.TaskState, kvledger.TaskState) (bool, error) {
	return false, s.err
}

// A Renew that takes a new lease (this Ledger did not take the claim's)
// and then fails to write releases the new lease; a Claim that fails to
// write releases its own. The claim's lease is left as it was.
func TestFailedRenewLeavesNoNewLease(t *testing.T) {
	const leases = "failed_renew_leases"
	n, ctx, store, l := leaseFixture(t, leases, "k", "free")
	fence, err := l.Claim(ctx, "w", "k", "w", time.Hour, time.Now())
	require.NoError(t, err)
	claimed, _, err := l.State(ctx, "k")
	require.NoError(t, err)

	broken := errors.New("the write failed")
	other := leaseLedger(t, n.JS, failingWrites{Store: store, err: broken}, leases)
	require.ErrorIs(t, other.Renew(ctx, "w", "k", "w", fence, time.Hour, time.Now()), broken)
	_, err = other.Claim(ctx, "x", "free", "x", time.Hour, time.Now())
	require.ErrorIs(t, err, broken)
	_, err = other.ClaimIfReady(ctx, "x", "free", "x", time.Hour, time.Now())
	require.ErrorIs(t, err, broken)
	require.Equal(t, []string{claimed.Lease}, liveLeaseKeys(t, n.JS, leases), "only the claim's own lease lives")
}

// Every call that ends a claim this Ledger took with a lease deletes the
// lease (endClaim): Release and Complete, and also an outcome written
// through the runtime's finish, whatever it is.
func TestEveryClaimEndDeletesItsLease(t *testing.T) {
	const leases = "end_leases"
	n, ctx, _, l := leaseFixture(t, leases, "k")
	for _, o := range []kvledger.Outcome{
		{Status: kvledger.StatusPending, Error: "flaky"},
		{Status: kvledger.StatusPending, Uncount: true},
		{Status: kvledger.StatusCompleted},
	} {
		rec, err := l.ClaimIfReady(ctx, "w", "k", "w", time.Hour, time.Now())
		require.NoError(t, err)
		require.Len(t, liveLeaseKeys(t, n.JS, leases), 1)
		_, err = l.Finish(ctx, "w", "k", "w", rec.Fence, o, time.Now())
		require.NoError(t, err)
		require.Empty(t, liveLeaseKeys(t, n.JS, leases), "%+v: the claim's lease goes with it", o)
	}
}

// An operator's Cancel of a task claimed through this Ledger keeps the
// claim, and its lease, while the claimant runs it (the handler has not
// returned); the claimant's outcome then ends it cancelled and deletes
// the lease with that write: no record names the lease any more.
func TestCancelOfAHeldClaimDeletesItsLease(t *testing.T) {
	const leases = "cancel_leases"
	n, ctx, _, l := leaseFixture(t, leases, "k")
	rec, err := l.ClaimIfReady(ctx, "w", "k", "w", time.Hour, time.Now())
	require.NoError(t, err)
	require.Len(t, liveLeaseKeys(t, n.JS, leases), 1)
	asked, err := l.Cancel(ctx, "ops", "k", "not needed", time.Now())
	require.NoError(t, err)
	require.Equal(t, kvledger.PhaseCancelling, asked.Phase(time.Now()))
	require.Len(t, liveLeaseKeys(t, n.JS, leases), 1, "the claim stays while its claimant runs it")
	done, err := l.Finish(ctx, "w", "k", "w", rec.Fence, kvledger.Outcome{Status: kvledger.StatusPending, Error: "flaky"}, time.Now())
	require.NoError(t, err)
	require.Equal(t, kvledger.PhaseCancelled, done.Phase(time.Now()), "a retry of a cancelled claim ends it cancelled")
	require.Equal(t, "not needed", done.LastError)
	require.Empty(t, liveLeaseKeys(t, n.JS, leases), "the cancelled claim's lease goes with it")
}
