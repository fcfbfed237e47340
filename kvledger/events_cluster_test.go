package kvledger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// TestEventsDurableAcrossLeaderChange: on a 3-node cluster with an R3
// ledger bucket, a durable consumer of the bucket's stream keeps
// delivering each write once, in per-key order and with no gap, across a
// change of the stream's leader, and a consumer of the same name opened
// after it resumes after its last acknowledgement.
func TestEventsDurableAcrossLeaderChange(t *testing.T) {
	c := natstest.WithCluster(t, 3)
	ctx := natstest.Context(t, 2*time.Minute)
	store := newKVStore(t, c.JS, kvledger.KVStoreConfig{Bucket: "clev", Replicas: 3})
	l := newLedger(t, store)
	now := time.Now()
	admit := func(key string) {
		t.Helper()
		natstest.Eventually(t, 20*time.Second, func() bool {
			_, err := l.Admit(ctx, "t", kvledger.IdempotencyKey(key), 1, nil, now) // idempotent: retried while the leader moves
			return err == nil
		}, "admit %s", key)
	}
	log := newEventLog()
	sub := func() *events.Durable {
		d, err := events.SubscribeDurable(ctx, c.JS, store.EventSource(), events.DurableConfig{Durable: "audit", OnGap: log.gap}, log.handle, func(err error) { t.Log(err) })
		require.NoError(t, err)
		return d
	}
	d := sub()
	for i := range 10 {
		admit(fmt.Sprintf("k%d", i))
	}
	for range 10 {
		natstest.Recv(t, log.c, 20*time.Second, "event before the leader change")
	}
	_, err := c.StepDownStream(ctx, "KV_clev")
	require.NoError(t, err)
	for i := range 10 {
		admit(fmt.Sprintf("k%d", 10+i))
	}
	for range 10 {
		natstest.Recv(t, log.c, 30*time.Second, "event after the leader change")
	}
	require.NoError(t, d.Close())

	// Claims written meanwhile reach a consumer of the same name, which
	// resumes after its last acknowledgement.
	for i := range 5 {
		natstest.Eventually(t, 20*time.Second, func() bool {
			_, err := l.Claim(ctx, "w", kvledger.IdempotencyKey(fmt.Sprintf("k%d", i)), "w", time.Minute, now)
			return err == nil
		}, "claim")
	}
	d = sub()
	t.Cleanup(func() { _ = d.Close() })
	for range 5 {
		e := natstest.Recv(t, log.c, 30*time.Second, "claim event after the resume")
		require.Equal(t, kvledger.ClaimedEvent, e.Name)
	}
	select {
	case e := <-log.c:
		t.Fatalf("an event more than the writes: %+v", e)
	case <-time.After(300 * time.Millisecond):
	}

	require.Empty(t, log.gapList())
	for i := range 20 {
		key := fmt.Sprintf("k%d", i)
		stored, err := l.KeyEvents(context.Background(), kvledger.IdempotencyKey(key))
		require.NoError(t, err)
		var got []events.Event
		log.mu.Lock()
		for _, e := range log.evs {
			if e.Key == key {
				got = append(got, e)
			}
		}
		log.mu.Unlock()
		require.Len(t, got, len(stored), "%s: each write once", key)
		for j := range got {
			require.Equal(t, stored[j].Revision, got[j].Revision, key)
			if j > 0 {
				require.Equal(t, got[j-1].Revision, got[j].PrevRevision, key)
			}
		}
	}
}
