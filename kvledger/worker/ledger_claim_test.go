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

// A claim made with kvledger's Claim beside running workers, by a Ledger
// with the workers' lease bucket (WithLeases), holds a lease: the
// workers leave the task alone while that lease lives on the server, and
// take it over once the server expired it. One claim protocol, whichever
// API made the claim.
func TestLedgerClaimHoldsOffWorkers(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	ctx := natstest.Context(t, 30*time.Second)
	m, err := kvlease.NewManager(ctx, n.JS, kvlease.Config{Bucket: e.leases})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	cli, err := kvledger.New(e.led.Store(), kvledger.WithLeases(m))
	require.NoError(t, err)

	e.submit(kvledger.Submission{Key: "t", Kind: "k", Seq: 1})
	_, err = cli.Claim(ctx, "cli", "t", "cli", 2*time.Second, time.Now())
	require.NoError(t, err)
	h, held, named, err := cli.ClaimLease(ctx, e.state("t"))
	require.NoError(t, err)
	require.True(t, named && held, "the claim holds a lease")

	started := make(chan time.Time, 1)
	w := e.worker(worker.Config{ClaimTTL: time.Second}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("k", func(context.Context, *worker.Task) error {
			started <- time.Now()
			return nil
		}))
	})
	final := e.waitFinal(20*time.Second, "t")
	require.Equal(t, kvledger.StatusCompleted, final["t"].Status)
	require.Equal(t, w.Owner(), final["t"].Owner)
	at := <-started
	// Same host, same clock as the server's: the worker starts only
	// once the server expired the claim's lease.
	require.False(t, at.Before(h.Expires.Add(-100*time.Millisecond)), "started at %s, the claim's lease expired at %s", at, h.Expires)
}
