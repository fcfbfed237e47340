package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// A worker cut off from the server for longer than ClaimTTL plus the
// lifetime of the server's expiry marker still takes a dead worker's
// claims over once its connection is back: its resumed lease watch cannot
// deliver an expiry whose marker is gone, so the worker reads the leases
// it holds live again. Before, it kept the dead lease live for ever and
// never took the claims over.
func TestTakeoverAfterOutageLongerThanExpiryMarker(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	ctx := natstest.Context(t, 60*time.Second)
	// The lease bucket keeps expiry markers 1 s (kvlease makes its own
	// with a minute), so the outage outlives the marker quickly.
	_, err := n.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: e.leases, History: 1, LimitMarkerTTL: time.Second})
	require.NoError(t, err)
	const ttl = time.Second

	jsA := natstest.JetStream(t, natstest.Connect(t, n.Server))
	startedA := make(chan kvledger.IdempotencyKey, 2)
	a := e.startOn(jsA, e.ledgerOn(jsA), worker.Config{ClaimTTL: ttl, Owner: "A", Concurrency: 2, ClaimAhead: -1}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			startedA <- task.Key()
			<-ctx.Done()
			return context.Cause(ctx)
		}))
	})
	e.submit(kvledger.Submission{Key: "j1", Kind: "job"})
	e.submit(kvledger.Submission{Key: "j2", Kind: "job"})
	natstest.Recv(t, startedA, 10*time.Second, "A starts a job")
	natstest.Recv(t, startedA, 10*time.Second, "A starts the other job")
	leaseA := e.state("j1").Lease
	require.NotEmpty(t, leaseA)

	// B reaches the server through a proxy the test cuts.
	p := natstest.NewDelayProxy(t, n.Server.ClientURL())
	ncB, err := nats.Connect(p.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(ncB.Close)
	jsB := natstest.JetStream(t, ncB)
	attemptB := make(chan int, 2)
	b := e.startOn(jsB, e.ledgerOn(jsB), worker.Config{ClaimTTL: ttl, Owner: "B", Concurrency: 2}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			attemptB <- task.Attempt()
			return nil
		}))
	})
	t.Cleanup(func() { _ = closeWorker(b) })

	back := ncB.StatusChanged(nats.CONNECTED)
	defer ncB.RemoveStatusListener(back)
	p.Cut(true)
	jsA.Conn().Close() // A dies: no renewal, no release
	t.Cleanup(func() { _ = closeWorker(a) })

	// The server expires A's lease, then drops the expiry marker.
	leases, err := n.JS.Stream(ctx, "KV_"+e.leases)
	require.NoError(t, err)
	natstest.Eventually(t, 20*time.Second, func() bool {
		_, err := leases.GetLastMsgForSubject(ctx, "$KV."+e.leases+"."+leaseA)
		return errors.Is(err, jetstream.ErrMsgNotFound)
	}, "A's lease and its expiry marker are gone from the stream")

	p.Cut(false)
	natstest.Recv(t, back, 20*time.Second, "B reconnects")
	reconnected := time.Now()
	// Within ClaimTTL of the reconnect (in practice: the watch's
	// replacement, one lease read and the claims).
	const bound = ttl + 4*time.Second
	final := e.waitFinal(bound, "j1", "j2")
	t.Logf("taken over %v after the reconnect", time.Since(reconnected))
	for _, k := range []kvledger.IdempotencyKey{"j1", "j2"} {
		require.Equal(t, kvledger.StatusCompleted, final[k].Status, "%s", k)
		require.Equal(t, kvledger.OwnerID("B"), final[k].Owner, "%s", k)
	}
	require.EqualValues(t, 2, b.Stats().TakenOver)
	require.Equal(t, 2, <-attemptB, "A's attempt ran: the takeover counts it")
}
