package dashtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// OperatorActions are the dashboard's task actions carried out by the
// ledger's own operator calls (Reopen, Cancel, RunNow, Delete), as
// natscoord ui wires them: each is one compare-and-set, at the revision
// the dashboard showed, that leaves an event.
type OperatorActions struct{ L *kvledger.Ledger }

// Reopen reopens a failed or cancelled task.
func (a OperatorActions) Reopen(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, rev uint64) error {
	_, err := a.L.Reopen(ctx, actor, key, time.Now(), kvledger.AtRevision(rev))
	return err
}

// Cancel cancels a task that has not ended.
func (a OperatorActions) Cancel(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, rev uint64) error {
	_, err := a.L.Cancel(ctx, actor, key, "cancelled from the dashboard by "+string(actor), time.Now(), kvledger.AtRevision(rev))
	return err
}

// RunNow makes a scheduled or retrying task ready, at rev (0: current).
func (a OperatorActions) RunNow(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, rev uint64) error {
	_, err := a.L.RunNow(ctx, actor, key, time.Now(), kvledger.AtRevision(rev))
	return err
}

// Delete removes an ended task.
func (a OperatorActions) Delete(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, rev uint64) error {
	return a.L.Delete(ctx, actor, key, time.Now(), kvledger.AtRevision(rev))
}

// Submit admits a runtime task (kind, run-at, attempts bound), failing
// the test on error or when the key was already admitted.
func Submit(t testing.TB, l *kvledger.Ledger, sub kvledger.Submission) {
	t.Helper()
	ok, err := l.Submit(natstest.Context(t, 5*time.Second), Source, sub)
	require.NoError(t, err)
	require.True(t, ok)
}

// LeasedClaimer returns a Ledger on the env's ledger bucket, on a
// connection of its own, whose claims hold leases of holder in the
// workers' claims bucket (worker.DefaultLeaseBucket), as a worker's claims
// do. Both are closed when the test ends.
func (e *Env) LeasedClaimer(t testing.TB, holder string) *kvledger.Ledger {
	t.Helper()
	ctx := natstest.Context(t, 10*time.Second)
	m, err := kvlease.NewManager(ctx, e.Node.NewJS(t), kvlease.Config{Bucket: worker.DefaultLeaseBucket, Holder: holder})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	store, err := kvledger.NewKVStore(ctx, e.Node.NewJS(t), kvledger.KVStoreConfig{Bucket: LedgerBucket})
	require.NoError(t, err)
	l, err := kvledger.New(store, kvledger.WithLeases(m))
	require.NoError(t, err)
	return l
}
