package main

import (
	"testing"
	"time"

	"github.com/nats-io/nuid"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/tasks"
)

// The demo's services, closed, have closed their tasks.Client, and with
// it the ledger store each opened: a submission through one is refused
// as closed, nothing sent, where a store left open was only cut off with
// its connection.
func TestDemoServicesCloseTheirClients(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	runID := nuid.Next()
	run := &demoRun{bucket: "natscoord_demo_" + runID, runID: runID, names: map[kvledger.OwnerID]string{}}
	ss, closeAll, err := startDemoServices(ctx, embeddedDialer(n.Server), run, 2)
	require.NoError(t, err)
	closeAll()
	require.Len(t, ss, 2)
	for _, s := range ss {
		_, err := s.client.Submit(ctx, buildStep{Step: "after-close"}, nil)
		require.ErrorIs(t, err, tasks.ErrClosed, s.name)
	}
}
