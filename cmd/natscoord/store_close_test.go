package main

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// The demo's workers, closed, have closed the ledger store each opened
// (after its runtime, before its connection): a write through one is
// refused as closed, nothing sent, where a store left open was only cut
// off with its connection.
func TestDemoWorkersCloseTheirLedgerStores(t *testing.T) {
	n := natstest.WithServer(t)
	dial := func(name string) (*nats.Conn, jetstream.JetStream, error) {
		nc, err := n.Server.Connect(nats.Name(name))
		if err != nil {
			return nil, nil, err
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			return nil, nil, err
		}
		return nc, js, nil
	}
	ctx := natstest.Context(t, 30*time.Second)
	runID := nuid.Next()
	ws, closeAll, err := startDemoWorkers(ctx, dial, &demoRun{bucket: "natscoord_demo_" + runID, runID: runID}, 2, runID)
	require.NoError(t, err)
	closeAll()
	require.Len(t, ws, 2)
	for _, w := range ws {
		store, ok := w.ledger.Store().(*kvledger.KVStore)
		require.True(t, ok)
		rec := kvledger.TaskState{Key: "after-close", Status: kvledger.StatusPending, Sequence: 1, CreatedAt: time.Now(), UpdatedAt: time.Now()}
		_, _, _, _, err := store.Insert(ctx, rec.Key, rec)
		require.ErrorIs(t, err, kvledger.ErrClosed, string(w.name))
	}
}
