package worker_test

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

// A running worker is listed, from another process, with its running
// task and its lease's server expiry; once it is killed (its connection
// gone, so it neither renews nor releases) it disappears when the server
// expires its lease, and its claim is no longer listed under anyone.
func TestLiveWorkersListsRunningWorkerUntilItsLeaseEnds(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	const ttl = 2 * time.Second
	ncA := natstest.Connect(t, n.Server)
	jsA := natstest.JetStream(t, ncA)
	started := make(chan struct{}, 1)
	a := e.startOn(jsA, e.ledgerOn(jsA), worker.Config{ClaimTTL: ttl, Owner: "A"}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, _ *worker.Task) error {
			started <- struct{}{}
			<-ctx.Done()
			return nil
		}))
	})
	t.Cleanup(func() { _ = closeWorker(a) }) // its connection is closed: errors are expected

	ctx := natstest.Context(t, 30*time.Second)
	m, err := kvlease.NewManager(ctx, n.JS, kvlease.Config{Bucket: e.leases})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })

	ws, err := worker.LiveWorkers(ctx, m, e.led)
	require.NoError(t, err)
	require.Empty(t, ws)

	e.submit(kvledger.Submission{Key: "job", Kind: "job"})
	e.submit(kvledger.Submission{Key: "idle", Kind: "nobody"})
	natstest.Recv(t, started, 10*time.Second, "A starts the job")
	ws, err = worker.LiveWorkers(ctx, m, e.led)
	require.NoError(t, err)
	require.Len(t, ws, 1)
	rec := e.state("job")
	require.Equal(t, kvledger.OwnerID("A"), ws[0].Owner)
	require.Equal(t, rec.Lease, ws[0].Lease)
	require.Equal(t, ttl, ws[0].Holder.TTL())
	require.False(t, ws[0].Holder.Expires.IsZero())
	require.Len(t, ws[0].Tasks, 1)
	require.Equal(t, kvledger.IdempotencyKey("job"), ws[0].Tasks[0].Key)

	jsA.Conn().Close() // A is killed: no renewal, no release
	natstest.Eventually(t, ttl+10*time.Second, func() bool {
		ws, err := worker.LiveWorkers(ctx, m, e.led)
		return err == nil && len(ws) == 0
	}, "the killed worker disappears once the server expires its lease")
}

// LiveWorkersOf keeps only the claimant leases of the ledger named, and
// puts under each the claimed records naming it.
func TestLiveWorkersOfJoinsLeasesAndClaims(t *testing.T) {
	wa := kvledger.NewClaimLeaseKey("led", "a.b")
	wb := kvledger.NewClaimLeaseKey("led", "b")
	other := kvledger.NewClaimLeaseKey("other", "c")
	leases := map[string]kvlease.Holder{
		wa: {ID: "pa"}, wb: {ID: "pb"}, other: {ID: "pc"},
		worker.LeaseKey("led", "job"): {ID: "per-record"}, // not a claimant's lease
	}
	recs := []kvledger.TaskState{
		{Key: "2", Status: kvledger.StatusClaimed, Lease: wa},
		{Key: "1", Status: kvledger.StatusClaimed, Lease: wa},
		{Key: "gone", Status: kvledger.StatusClaimed, Lease: kvledger.NewClaimLeaseKey("led", "dead")},
		{Key: "done", Status: kvledger.StatusCompleted, Lease: wb},
	}
	ws := worker.LiveWorkersOf("led", leases, recs)
	require.Len(t, ws, 2)
	require.Equal(t, kvledger.OwnerID("a.b"), ws[0].Owner, "an owner with dots is read back whole")
	require.Equal(t, "pa", ws[0].Holder.ID)
	require.Equal(t, []kvledger.IdempotencyKey{"1", "2"}, []kvledger.IdempotencyKey{ws[0].Tasks[0].Key, ws[0].Tasks[1].Key})
	require.Equal(t, kvledger.OwnerID("b"), ws[1].Owner)
	require.Empty(t, ws[1].Tasks)
}
