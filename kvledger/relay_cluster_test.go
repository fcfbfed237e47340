package kvledger_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// TestRelayAcrossLeaderChangesR3: on a 3-node cluster, with the ledger's
// bucket and the event stream both R3, a relay started after the writer
// died recovers the events it never published, and keeps every key's
// events exactly once and in order while the leaders of both streams move.
func TestRelayAcrossLeaderChangesR3(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := natstest.WithCluster(t, 3)
	ctx := natstest.Context(t, 90*time.Second)
	const bucket = "relayr3"
	ledger := func() *kvledger.Ledger {
		js := c.NewJS(t)
		store := newKVStore(t, js, kvledger.KVStoreConfig{Bucket: bucket, Replicas: 3})
		bus := natstest.Open(t, "R3 event stream", func(ctx context.Context) (*events.JetStreamBus, error) {
			return events.NewJetStreamBus(ctx, js, events.JetStreamBusConfig{Replicas: 3})
		})
		l := newLedger(t, store, bus)
		return l
	}
	log := &eventLog{c: make(chan events.Event, 1000)}
	p1 := ledger()
	d, err := events.SubscribeDurable(ctx, c.JS, events.DurableConfig{Durable: "audit-r3"}, log.handle, func(err error) { t.Log(err) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })

	dieAfterEachClaim(p1)
	keys := make([]kvledger.IdempotencyKey, 6)
	for i := range keys {
		keys[i] = kvledger.IdempotencyKey(fmt.Sprintf("job-%d", i))
		ok, err := p1.Admit(ctx, "p1", keys[i], 1, nil, t0)
		require.NoError(t, err)
		require.True(t, ok)
		_, err = p1.Claim(ctx, "p1", keys[i], "w1", time.Minute, t0)
		require.ErrorIs(t, err, errKilled)
	}
	stepDown := func() {
		t.Helper()
		for _, s := range []string{"KV_" + bucket, "LEDGER"} {
			_, err := c.StepDownStream(ctx, s)
			require.NoError(t, err, "step down %s", s)
		}
	}
	stepDown()

	p2 := ledger()
	relayErrs := make(chan error, 100)
	require.NoError(t, p2.StartRelay(ctx, kvledger.RelayConfig{OnError: func(err error) {
		t.Log(err)
		select {
		case relayErrs <- err:
		default:
		}
	}}))
	want := []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent}
	waitFor := func(want []events.Name) {
		t.Helper()
		natstest.Eventually(t, 30*time.Second, func() bool {
			for _, k := range keys {
				if !slices.Equal(log.byKey(string(k)), want) {
					return false
				}
			}
			return true
		}, "events %v for every key", want)
	}
	waitFor(want)

	// Complete every key while the leaders move again halfway.
	for i, k := range keys {
		if i == len(keys)/2 {
			stepDown()
		}
		s, _, err := p2.State(ctx, k)
		require.NoError(t, err)
		natstest.Eventually(t, 20*time.Second, func() bool {
			err = p2.Complete(ctx, "p2", k, "w1", s.Fence, kvledger.StatusCompleted, t0)
			if err != nil {
				t.Logf("complete %s: %v (retrying)", k, err)
			}
			return err == nil
		}, "complete %s", k)
	}
	waitFor(append(want, kvledger.CompletedEvent))

	// Nothing arrives twice once the relay has been through everything
	// (waitQuiet also drains the log's channel).
	waitQuiet(t, c.JS, log, bucket, true)
	for _, k := range keys {
		require.Equal(t, append(want, kvledger.CompletedEvent), log.byKey(string(k)))
	}
	require.Empty(t, relayErrs, "the relay published everything without an error")
}
