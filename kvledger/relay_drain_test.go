package kvledger_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
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
// holding one of those revisions unacknowledged (its connection drops, as a
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
	t.Cleanup(func() { _ = p1.Close(context.Background()) }) // its connection is gone: the drain fails fast
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
		return err == nil && ci.NumAckPending == 1 && ci.NumPending == uint64(len(keys)-1)
	}, "the doomed relay holds a claim in a stalled publish, the others wait")
	nc1.Close() // the kill: no ack, no in-progress ack any more

	p2 := process(t, n, bucket)
	require.NoError(t, p2.StartRelay(ctx, kvledger.RelayConfig{}))
	start := time.Now()
	require.NoError(t, p2.Close(context.Background()))
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

// countingBus counts publishes per (key, revision), each taking delay.
type countingBus struct {
	next  events.Bus
	delay time.Duration
	mu    sync.Mutex
	n     map[string]int
}

func (b *countingBus) Publish(ctx context.Context, e events.Event) error {
	b.mu.Lock()
	if b.n == nil {
		b.n = map[string]int{}
	}
	b.n[fmt.Sprintf("%s@%d", e.Key, e.Revision)]++
	b.mu.Unlock()
	select {
	case <-time.After(b.delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.next.Publish(ctx, e)
}

// A publish slower than AckWait keeps its revision with in-progress
// acks: the other relay of the same name never gets it, and each
// revision is published once.
func TestRelaySlowPublishKeepsItsRevision(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	const bucket = "slowrelay"
	writer := newLedger(t, newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: bucket}), nil) // publishes nothing itself
	jsBus, err := events.NewJetStreamBus(ctx, n.JS, events.JetStreamBusConfig{})
	require.NoError(t, err)
	bus := &countingBus{next: jsBus, delay: 700 * time.Millisecond}
	cfg := kvledger.RelayConfig{AckWait: 200 * time.Millisecond}
	for range 2 {
		l := newLedger(t, newKVStore(t, n.NewJS(t), kvledger.KVStoreConfig{Bucket: bucket}), bus)
		require.NoError(t, l.StartRelay(ctx, cfg))
	}
	for i := range 3 {
		ok, err := writer.Admit(ctx, "w", kvledger.IdempotencyKey(fmt.Sprintf("s%d", i)), 1, nil, t0)
		require.NoError(t, err)
		require.True(t, ok)
	}
	cons, err := n.JS.Consumer(ctx, "KV_"+bucket, "kvledger-relay")
	require.NoError(t, err)
	natstest.Eventually(t, 30*time.Second, func() bool {
		ci, err := cons.Info(ctx)
		return err == nil && ci.NumPending == 0 && ci.NumAckPending == 0
	}, "all relayed")
	ci, err := cons.Info(ctx)
	require.NoError(t, err)
	require.Zero(t, ci.NumRedelivered, "no revision went to the other relay")
	bus.mu.Lock()
	defer bus.mu.Unlock()
	require.Len(t, bus.n, 3)
	for id, c := range bus.n {
		require.Equal(t, 1, c, "%s published once", id)
	}
}

// Close's ctx bounds the relay drain: with a stalled bus and a ctx that
// ends long before DrainTimeout, Close returns the ctx's error at once;
// the relay is stopped all the same, so a second Close has nothing left.
func TestCloseCtxBoundsRelayDrain(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "closectx"})
	jsBus, err := events.NewJetStreamBus(ctx, n.JS, events.JetStreamBusConfig{})
	require.NoError(t, err)
	bus := &stallBus{next: jsBus}
	l, err := kvledger.New(store, bus)
	require.NoError(t, err)
	require.NoError(t, l.StartRelay(ctx, kvledger.RelayConfig{Durable: "closectx", DrainTimeout: time.Minute}))
	bus.stalled.Store(true) // every publish, the writer's and the relay's, now hangs
	pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, _ = l.Admit(pctx, "t", "k", 1, nil, t0) // the record lands; its event does not
	pcancel()

	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = l.Close(cctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 10*time.Second, "Close waited for DrainTimeout, not its ctx")
	require.NoError(t, l.Close(context.Background()), "a later Close has no relay left")
}
