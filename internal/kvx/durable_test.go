package kvx_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
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

// Idempotent sends an unanswered request again every perTry, returns the
// first answer, and does not repeat a request that was answered with an
// error.
func TestIdempotentResendsOnlyUnanswered(t *testing.T) {
	ctx := natstest.Context(t, 10*time.Second)
	var tries atomic.Int64
	err := kvx.Idempotent(ctx, 20*time.Millisecond, func(ctx context.Context) error {
		if tries.Add(1) < 3 {
			<-ctx.Done() // unanswered
			return ctx.Err()
		}
		return nil
	})
	require.NoError(t, err)
	require.EqualValues(t, 3, tries.Load())

	tries.Store(0)
	refused := errors.New("refused")
	err = kvx.Idempotent(ctx, 20*time.Millisecond, func(context.Context) error { tries.Add(1); return refused })
	require.ErrorIs(t, err, refused)
	require.EqualValues(t, 1, tries.Load(), "an answer is not sent again")

	tries.Store(0)
	err = kvx.Idempotent(context.Background(), 20*time.Millisecond, func(ctx context.Context) error {
		tries.Add(1)
		<-ctx.Done()
		return ctx.Err()
	})
	require.ErrorIs(t, err, context.DeadlineExceeded, "a ctx that cannot end still gets an end")
	require.EqualValues(t, 3, tries.Load())
}
