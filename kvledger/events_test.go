package kvledger_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

var errKilled = errors.New("killed between write and publish")

// dieAfterEachClaim makes l behave like a process that dies right after
// each claim it writes, before publishing its event.
func dieAfterEachClaim(l *kvledger.Ledger) {
	kvledger.SetAfterWriteHook(l, func(_ kvledger.IdempotencyKey, rec kvledger.TaskState) error {
		if rec.LastEvent == kvledger.ClaimedEvent {
			return errKilled
		}
		return nil
	})
}

// eventLog collects events from a durable consumer.
type eventLog struct {
	mu  sync.Mutex
	evs []events.Event
	c   chan events.Event
}

func (l *eventLog) handle(_ context.Context, e events.Event) error {
	l.mu.Lock()
	l.evs = append(l.evs, e)
	l.mu.Unlock()
	l.c <- e
	return nil
}

func (l *eventLog) byKey(key string) []events.Name {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []events.Name
	for _, e := range l.evs {
		if e.Key == key {
			out = append(out, e.Name)
		}
	}
	return out
}

// process is one "process" of the test: its own connection, store, bus
// and ledger.
func process(t *testing.T, n *natstest.Node, bucket string) *kvledger.Ledger {
	t.Helper()
	ctx := natstest.Context(t, 30*time.Second)
	js := n.NewJS(t)
	store := newKVStore(t, js, kvledger.KVStoreConfig{Bucket: bucket})
	bus, err := events.NewJetStreamBus(ctx, js, events.JetStreamBusConfig{})
	require.NoError(t, err)
	l := newLedger(t, store, bus)
	return l
}

// waitQuiet waits until the relay consumer has nothing pending, then
// publishes a marker event and waits for it: everything published
// before it has been delivered.
func waitQuiet(t *testing.T, js jetstream.JetStream, log *eventLog, bucket string, relay bool) {
	t.Helper()
	ctx := natstest.Context(t, 10*time.Second)
	if relay {
		natstest.Eventually(t, 10*time.Second, func() bool {
			c, err := js.Consumer(ctx, "KV_"+bucket, "kvledger-relay")
			if err != nil {
				return false
			}
			info, err := c.Info(ctx)
			return err == nil && info.NumPending == 0 && info.NumAckPending == 0
		}, "relay caught up")
	}
	bus, err := events.NewJetStreamBus(ctx, js, events.JetStreamBusConfig{})
	require.NoError(t, err)
	require.NoError(t, bus.Publish(ctx, events.Event{Name: "ledger.marker", Source: "test", Key: "marker", Revision: uint64(time.Now().UnixNano())}))
	for {
		if e := natstest.Recv(t, log.c, 10*time.Second, "marker"); e.Name == "ledger.marker" {
			return
		}
	}
}

// TestEventsSurviveWriterDeath kills a writer between its write and its
// publish and checks, through a durable consumer on ledger.*, that every
// event arrives exactly once and in write order: recovered by the next
// writer of the key, or by a relay for a key's last write.
func TestEventsSurviveWriterDeath(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	const bucket = "deaths"
	log := &eventLog{c: make(chan events.Event, 1000)}

	p1 := process(t, n, bucket)
	d, err := events.SubscribeDurable(ctx, n.JS, events.DurableConfig{Durable: "audit"}, log.handle, func(err error) { t.Error(err) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })

	// p1 dies right after writing each claim (its next call would be
	// from a new process).
	dieAfterEachClaim(p1)
	for _, k := range []kvledger.IdempotencyKey{"next-writer", "relayed", "late"} {
		ok, err := p1.Admit(ctx, "p1", k, 1, nil, t0)
		require.NoError(t, err)
		require.True(t, ok)
		_, err = p1.Claim(ctx, "p1", k, "w1", time.Minute, t0)
		require.ErrorIs(t, err, errKilled)
	}

	// A second process, no relay yet: its write on "next-writer" first
	// delivers the claim p1 never published.
	p2 := process(t, n, bucket)
	s, _, err := p2.State(ctx, "next-writer")
	require.NoError(t, err)
	require.NoError(t, p2.Complete(ctx, "p2", "next-writer", "w1", s.Fence, kvledger.StatusCompleted, t0))
	waitQuiet(t, n.JS, log, bucket, false)
	require.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent, kvledger.CompletedEvent}, log.byKey("next-writer"))
	require.Equal(t, []events.Name{kvledger.AdmittedEvent}, log.byKey("relayed"), "nobody wrote it again yet")

	// A relay recovers the last writes; re-publishing everything else is
	// de-duplicated by the stream.
	require.NoError(t, p2.StartRelay(ctx, kvledger.RelayConfig{OnError: func(err error) { t.Error(err) }}))
	waitQuiet(t, n.JS, log, bucket, true)
	require.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent}, log.byKey("relayed"))
	require.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent}, log.byKey("late"))

	// Later writes while the relay runs: still once each, in order.
	s, _, err = p2.State(ctx, "late")
	require.NoError(t, err)
	f, err := p2.Takeover(ctx, "p2", "late", "w2", time.Minute, t0.Add(time.Hour))
	require.NoError(t, err)
	require.NoError(t, p2.Renew(ctx, "p2", "late", "w2", f, time.Minute, t0.Add(time.Hour)))
	require.ErrorIs(t, p2.Complete(ctx, "p2", "late", "w1", s.Fence, kvledger.StatusFailed, t0), kvledger.ErrFenced)
	require.NoError(t, p2.Complete(ctx, "p2", "late", "w2", f, kvledger.StatusFailed, t0.Add(time.Hour)))
	waitQuiet(t, n.JS, log, bucket, true)
	require.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent, kvledger.TakenOverEvent,
		kvledger.RenewedEvent, kvledger.CompletedEvent}, log.byKey("late"))
	require.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent, kvledger.CompletedEvent}, log.byKey("next-writer"))

	// Revisions rise per key, and no (key, revision) appears twice.
	log.mu.Lock()
	defer log.mu.Unlock()
	last := map[string]uint64{}
	for _, e := range log.evs {
		if e.Source != bucket {
			continue
		}
		require.Greater(t, e.Revision, last[e.Key], "%s %s", e.Key, e.Name)
		last[e.Key] = e.Revision
	}
}

// TestRelayErrors: a relay needs a KVStore and a bus, and stops with
// Close.
func TestRelayErrors(t *testing.T) {
	ctx := context.Background()
	l, err := kvledger.New(nil, events.BusFunc(func(context.Context, events.Event) error { return nil }))
	require.NoError(t, err)
	require.ErrorIs(t, l.StartRelay(ctx, kvledger.RelayConfig{}), kvledger.ErrNoRelay)
	n := natstest.WithServer(t)
	l, err = kvledger.New(newKVStore(t, n.JS, kvledger.KVStoreConfig{}), nil)
	require.NoError(t, err)
	require.ErrorIs(t, l.StartRelay(ctx, kvledger.RelayConfig{}), kvledger.ErrNoRelay)
	l, err = kvledger.New(newKVStore(t, n.JS, kvledger.KVStoreConfig{}), events.BusFunc(func(context.Context, events.Event) error { return nil }))
	require.NoError(t, err)
	require.ErrorIs(t, l.StartRelay(ctx, kvledger.RelayConfig{Durable: "a.b"}), kvledger.ErrInvalidConfig)
	require.NoError(t, l.StartRelay(ctx, kvledger.RelayConfig{}))
	require.NoError(t, l.Close(context.Background()))
	require.ErrorIs(t, l.StartRelay(ctx, kvledger.RelayConfig{}), kvledger.ErrClosed)
}
