package kvx_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// A hub whose watch ends by itself (its connection closed) must not leave
// nats.go's context goroutine behind: the package's goroutine-leak check fails
// otherwise.
func TestHubWatchEndedByConnectionLeavesNoGoroutine(t *testing.T) {
	n := natstest.WithServer(t)
	nc := natstest.Connect(t, n.Server)
	ctx := natstest.Context(t, 10*time.Second)
	b, err := kvx.Open(ctx, natstest.JetStream(t, nc), kvx.Config{Bucket: "hubend", LimitMarkerTTL: time.Second})
	require.NoError(t, err)
	h := b.NewHub(">")
	s, err := h.Subscribe(ctx, "k")
	require.NoError(t, err)
	nc.Close()
	select {
	case _, ok := <-s.C():
		require.False(t, ok, "the watch's end closes subscribers")
	case <-time.After(5 * time.Second):
		t.Fatal("subscriber not released when the connection closed")
	}
	s.Close()
	require.NoError(t, h.Close())
}
