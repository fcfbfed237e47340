package kvx_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// Barrier is acknowledged by a stream that can commit, and fails (within
// the caller's bound, never as success) when its stream has lost its
// quorum: the only server left cannot confirm anything it would answer.
func TestBarrierNeedsAQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := natstest.WithCluster(t, 3)
	b := openBucket(t, c.JS, 3)
	ctx := natstest.Context(t, 60*time.Second)
	natstest.Eventually(t, 20*time.Second, func() bool {
		octx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return b.Barrier(octx, "sync") == nil
	}, "barrier on a healthy R3 bucket")
	e, err := b.Last(ctx, "sync")
	require.NoError(t, err)
	require.Empty(t, e.Value)

	// A client of node 0 only; then the other two nodes stop.
	b0, err := kvx.Bind(ctx, natstest.JetStream(t, natstest.Connect(t, c.Node(0))), "t", true)
	require.NoError(t, err)
	for i := 1; i < 3; i++ {
		require.NoError(t, c.StopNode(ctx, i))
	}
	start := time.Now()
	octx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	require.Error(t, b0.Barrier(octx, "sync"), "a stream without a quorum confirmed a barrier")
	require.Less(t, time.Since(start), 10*time.Second, "the barrier outlived its bound")
}
