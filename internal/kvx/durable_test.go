package kvx_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/natstest"
)

// A consumer creation whose answers do not come back (a stalled
// connection) is sent again every perTry instead of waiting out the
// caller's whole ctx, and the first answer that comes back is taken.
func TestDurableResendsAnUnansweredCreate(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	_, err := n.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "D", Subjects: []string{"d.>"}})
	require.NoError(t, err)
	var creates atomic.Int64
	spy, err := n.NC.Subscribe("$JS.API.CONSUMER.CREATE.D.>", func(*nats.Msg) { creates.Add(1) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = spy.Unsubscribe() })
	require.NoError(t, n.NC.Flush())

	p, js := natstest.ThroughProxy(t, n)
	cfg := jetstream.ConsumerConfig{Durable: "d1", AckPolicy: jetstream.AckExplicitPolicy}
	p.Stall(true)
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	_, err = kvx.Durable(sctx, js, "D", cfg, 150*time.Millisecond)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	natstest.Eventually(t, 5*time.Second, func() bool { return creates.Load() >= 4 }, "the create was sent again every 150 ms")

	p.Stall(false)
	cons, err := kvx.Durable(ctx, js, "D", cfg, time.Second)
	require.NoError(t, err)
	require.Equal(t, "d1", cons.CachedInfo().Name)
}
