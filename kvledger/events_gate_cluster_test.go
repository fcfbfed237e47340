package kvledger_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// With the events stream's leader gone (an R1 stream whose node is
// stopped) and the R3 bucket still available: Admit succeeds and reports
// its lost event, the next write of the key is refused with
// ErrEventsUnavailable and writes nothing, and once the stream is back
// the key's events are complete and in order.
func TestEventsStreamLeaderGoneKeepsOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := natstest.WithCluster(t, 3)
	ctx := natstest.Context(t, 120*time.Second)
	js := c.NewJS(t)
	store := newKVStore(t, js, kvledger.KVStoreConfig{Bucket: "gate", Replicas: 3})
	bus := natstest.Open(t, "R1 event stream", func(ctx context.Context) (*events.JetStreamBus, error) {
		return events.NewJetStreamBus(ctx, js, events.JetStreamBusConfig{Stream: "GATE", Replicas: 1})
	})
	var publishErrs atomic.Int64
	l := newLedger(t, store, bus, kvledger.WithPublishErrorHandler(func(kvledger.IdempotencyKey, uint64, error) { publishErrs.Add(1) }))

	leader := c.StreamLeader("GATE")
	require.GreaterOrEqual(t, leader, 0)
	require.NoError(t, c.StopNode(ctx, leader))

	// The stopped node may have led the bucket too: retry the admission
	// (idempotent) until the bucket has its new leader.
	natstest.Eventually(t, 30*time.Second, func() bool {
		octx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := l.Admit(octx, "a", "k", 1, nil, t0)
		return err == nil
	}, "admit with the event stream down")
	require.GreaterOrEqual(t, publishErrs.Load(), int64(1), "the admission's event could not be published")
	before, _, err := l.State(ctx, "k")
	require.NoError(t, err)

	octx, cancel := context.WithTimeout(ctx, 20*time.Second)
	_, err = l.Claim(octx, "w", "k", "w", time.Minute, t0)
	cancel()
	require.ErrorIs(t, err, kvledger.ErrEventsUnavailable)
	after, _, err := l.State(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, before.Rev, after.Rev, "the refused claim wrote nothing")
	require.Equal(t, kvledger.StatusPending, after.Status)

	require.NoError(t, c.RestartNode(ctx, leader))
	var fence kvledger.FenceToken
	natstest.Eventually(t, 60*time.Second, func() bool {
		octx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		fence, err = l.Claim(octx, "w", "k", "w", time.Minute, t0)
		return err == nil
	}, "claim once the events stream is back")
	require.NotZero(t, fence)

	// The stream holds the key's events once each, in write order (the
	// restarted stream may answer "no responders" for a moment: retry).
	var names []string
	natstest.Eventually(t, 30*time.Second, func() bool {
		names = nil
		str, err := js.Stream(ctx, "GATE")
		if err != nil {
			return false
		}
		cons, err := str.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
		if err != nil {
			return false
		}
		for len(names) < 2 {
			m, err := cons.Next(jetstream.FetchMaxWait(2 * time.Second))
			if err != nil {
				return false
			}
			e, err := events.Unmarshal(m.Data())
			require.NoError(t, err)
			names = append(names, string(e.Name))
		}
		return true
	}, "read the event stream")
	require.Equal(t, []string{string(kvledger.AdmittedEvent), string(kvledger.ClaimedEvent)}, names)
}
