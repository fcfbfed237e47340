package worker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// A started worker is listed, from another process, idle with its kinds
// before it claims anything; running, with its running task, its kinds
// and its claim lease's server expiry; once it is killed (its connection
// gone, so it neither renews nor releases) its claim lease goes when the
// server expires it, and its claim is no longer listed under anyone
// (its presence lists it, idle, until the server expires that too).
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
	require.Len(t, ws, 1)
	require.True(t, ws[0].Idle, "listed by its presence")
	require.Equal(t, 3*time.Minute, ws[0].Holder.TTL(), "a presence outlives a death by up to 3 minutes")
	require.Equal(t, kvledger.OwnerID("A"), ws[0].Owner)
	require.Equal(t, []string{"job"}, ws[0].Kinds)
	require.True(t, ws[0].KindsKnown)
	require.Empty(t, ws[0].Tasks)

	e.submit(kvledger.Submission{Key: "job", Kind: "job"})
	e.submit(kvledger.Submission{Key: "idle", Kind: "nobody"})
	natstest.Recv(t, started, 10*time.Second, "A starts the job")
	ws, err = worker.LiveWorkers(ctx, m, e.led)
	require.NoError(t, err)
	require.Len(t, ws, 1)
	rec := e.state("job")
	require.Equal(t, kvledger.OwnerID("A"), ws[0].Owner)
	require.False(t, ws[0].Idle, "one row: its claim lease, not its presence too")
	require.Equal(t, []string{"job"}, ws[0].Kinds)
	require.Equal(t, rec.Lease, ws[0].Lease)
	require.Equal(t, ttl, ws[0].Holder.TTL())
	require.False(t, ws[0].Holder.Expires.IsZero())
	require.Len(t, ws[0].Tasks, 1)
	require.Equal(t, kvledger.IdempotencyKey("job"), ws[0].Tasks[0].Key)

	jsA.Conn().Close() // A is killed: no renewal, no release
	natstest.Eventually(t, ttl+10*time.Second, func() bool {
		ws, err := worker.LiveWorkers(ctx, m, e.led)
		return err == nil && len(ws) == 1 && ws[0].Idle && len(ws[0].Tasks) == 0
	}, "the killed worker's claim lease goes once the server expires it")
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

// A worker's presence lists it idle, with the kinds its lease states,
// unless the same process holds a claim lease, whose row it is then; a
// claimant that states no kinds says so.
func TestLiveWorkersOfListsIdleWorkersByPresence(t *testing.T) {
	busy, idle, ledger := worker.PresenceKey("led", "busy"), worker.PresenceKey("led", "idle"), kvledger.NewClaimLeaseKey("led", "ledger")
	claim := kvledger.NewClaimLeaseKey("led", "busy")
	leases := map[string]kvlease.Holder{
		busy:                             {ID: "pb", Host: "h", PID: 1, Info: `{"kinds":["mail","sms"]}`},
		claim:                            {ID: "pb", Host: "h", PID: 1, Info: `{"kinds":["mail","sms"]}`},
		idle:                             {ID: "pi", Host: "h", PID: 2, Info: `{"kinds":["report"],"more":3}`},
		ledger:                           {ID: "pl"}, // a Ledger claiming WithLeases: no kinds stated
		worker.PresenceKey("other", "x"): {ID: "px", Info: `{"kinds":["mail"]}`},
	}
	ws := worker.LiveWorkersOf("led", leases, []kvledger.TaskState{{Key: "t", Status: kvledger.StatusClaimed, Lease: claim}})
	require.Len(t, ws, 3)
	require.Equal(t, kvledger.OwnerID("busy"), ws[0].Owner)
	require.Equal(t, claim, ws[0].Lease)
	require.False(t, ws[0].Idle)
	require.Equal(t, []string{"mail", "sms"}, ws[0].Kinds)
	require.Len(t, ws[0].Tasks, 1)
	require.Equal(t, kvledger.OwnerID("idle"), ws[1].Owner)
	require.True(t, ws[1].Idle)
	require.Equal(t, idle, ws[1].Lease)
	require.Equal(t, []string{"report"}, ws[1].Kinds)
	require.Equal(t, 3, ws[1].KindsLeftOut)
	require.True(t, ws[1].KindsKnown)
	require.Equal(t, kvledger.OwnerID("ledger"), ws[2].Owner)
	require.False(t, ws[2].KindsKnown)
	for k := range leases {
		_, claimant := kvledger.ClaimLeaseOwner("led", k)
		require.Equal(t, claimant || k == busy || k == idle, worker.IsWorkerLease("led", k), k)
	}
}

// A worker with more kinds than fit in a lease value states the first
// ones (sorted) and how many it left out.
func TestLeaseInfoBoundsKinds(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	var kinds []string
	w := e.startOn(n.JS, e.led, worker.Config{Owner: "many"}, func(w *worker.Worker) {
		for i := range 1000 {
			k := fmt.Sprintf("kind-%04d-%s", i, strings.Repeat("x", 20))
			kinds = append(kinds, k)
			require.NoError(t, w.Handle(k, func(context.Context, *worker.Task) error { return nil }))
		}
	})
	t.Cleanup(func() { require.NoError(t, closeWorker(w)) })
	ctx := natstest.Context(t, 20*time.Second)
	var ws []worker.LiveWorker
	natstest.Eventually(t, 10*time.Second, func() bool {
		var err error
		ws, err = w.LiveWorkers(ctx)
		return err == nil && len(ws) == 1
	}, "the worker's presence")
	require.True(t, ws[0].KindsKnown)
	require.NotEmpty(t, ws[0].Kinds)
	require.Equal(t, kinds[:len(ws[0].Kinds)], ws[0].Kinds)
	require.Equal(t, len(kinds), len(ws[0].Kinds)+ws[0].KindsLeftOut)
	require.LessOrEqual(t, len(ws[0].Holder.Info), kvlease.MaxInfoBytes)
	require.Greater(t, len(ws[0].Holder.Info), kvlease.MaxInfoBytes-40, "as many as fit")
}
