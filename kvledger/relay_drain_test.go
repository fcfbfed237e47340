package kvledger_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// stallBus passes events to next until stalled, and then holds every
// publish until its ctx ends: a relay stuck in a publish when its process
// is killed.
type stallBus struct {
	next    events.Bus
	stalled atomic.Bool
}

func (b *stallBus) Publish(ctx context.Context, e events.Event) error {
	if b.stalled.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return b.next.Publish(ctx, e)
}

// A writer dies between each write and its publish, and its relay dies
// holding those revisions unacknowledged (its connection drops, as a
// SIGKILL leaves it). The survivor's Close drains: right after it
// returns, the stream holds every key's last event.
func TestRelayDrainCoversADeadRelay(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	const bucket = "drain"

	nc1 := natstest.Connect(t, n.Server)
	js1 := natstest.JetStream(t, nc1)
	store1 := newKVStore(t, js1, kvledger.KVStoreConfig{Bucket: bucket})
	jsBus1, err := events.NewJetStreamBus(ctx, js1, events.JetStreamBusConfig{})
	require.NoError(t, err)
	bus1 := &stallBus{next: jsBus1}
	p1, err := kvledger.New(store1, bus1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p1.Close() }) // its connection is gone: the drain fails fast
	require.NoError(t, p1.StartRelay(ctx, kvledger.RelayConfig{DrainTimeout: 100 * time.Millisecond}))

	keys := make([]kvledger.IdempotencyKey, 5)
	for i := range keys {
		keys[i] = kvledger.IdempotencyKey(fmt.Sprintf("k%d", i))
		ok, err := p1.Admit(ctx, "p1", keys[i], 1, nil, t0)
		require.NoError(t, err)
		require.True(t, ok)
	}
	cons, err := n.JS.Consumer(ctx, "KV_"+bucket, "kvledger-relay")
	require.NoError(t, err)
	natstest.Eventually(t, 20*time.Second, func() bool {
		ci, err := cons.Info(ctx)
		return err == nil && ci.NumPending == 0 && ci.NumAckPending == 0
	}, "admissions relayed")

	bus1.stalled.Store(true)
	dieAfterEachClaim(p1)
	for _, k := range keys {
		_, err := p1.Claim(ctx, "p1", k, "w1", time.Minute, t0)
		require.ErrorIs(t, err, errKilled)
	}
	natstest.Eventually(t, 20*time.Second, func() bool {
		ci, err := cons.Info(ctx)
		return err == nil && ci.NumAckPending == len(keys)
	}, "the doomed relay holds every claim")
	nc1.Close() // the kill: no ack, no in-progress ack any more

	p2 := process(t, n, bucket)
	require.NoError(t, p2.StartRelay(ctx, kvledger.RelayConfig{}))
	start := time.Now()
	require.NoError(t, p2.Close())
	t.Logf("survivor's Close drained in %v", time.Since(start))

	// Right after Close, not later: every key's claim event is stored.
	str, err := n.JS.Stream(ctx, events.DefaultStream)
	require.NoError(t, err)
	oc, err := str.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	info, err := str.Info(ctx)
	require.NoError(t, err)
	got := map[string][]events.Name{}
	for range info.State.Msgs {
		m, err := oc.Next(jetstream.FetchMaxWait(5 * time.Second))
		require.NoError(t, err)
		e, err := events.Unmarshal(m.Data())
		require.NoError(t, err)
		got[e.Key] = append(got[e.Key], e.Name)
	}
	for _, k := range keys {
		require.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent}, got[string(k)], "%s", k)
	}
}
