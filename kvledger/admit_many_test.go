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

// AdmitMany inserts new tasks in atomic batches when the stream allows
// them, falls back to one by one for a batch that holds a duplicate, and
// gives the same answers and records either way.
func TestAdmitManyAtomicBatches(t *testing.T) {
	n := natstest.WithServer(t)
	for _, atomic := range []bool{false, true} {
		t.Run(fmt.Sprint("atomic=", atomic), func(t *testing.T) {
			store := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
			ctx := natstest.Context(t, 60*time.Second)
			if atomic {
				require.NoError(t, store.EnableAtomicBatches(ctx))
			}
			l, err := kvledger.New(store)
			require.NoError(t, err)
			_, err = l.Admit(ctx, "t", "k1500", 1, nil, time.Now()) // a duplicate in the second batch
			require.NoError(t, err)
			subs := make([]kvledger.Submission, 2500)
			for i := range subs {
				subs[i] = kvledger.Submission{Key: kvledger.IdempotencyKey(fmt.Sprintf("k%d", i)), Seq: 1, Kind: "bulk", Task: i}
			}
			subs[10].Needs = []kvledger.IdempotencyKey{"k0"} // needs go one by one
			start := time.Now()
			oks, err := l.AdmitMany(ctx, "t", subs)
			require.NoError(t, err)
			t.Logf("AdmitMany of %d: %v", len(subs), time.Since(start))
			for i, ok := range oks {
				require.Equal(t, i != 1500, ok, "k%d", i)
			}
			for _, i := range []int{0, 10, 999, 1000, 1499, 1501, 2499} {
				s, found, err := l.State(ctx, subs[i].Key)
				require.NoError(t, err)
				require.True(t, found)
				require.Equal(t, "bulk", s.Kind)
				require.Equal(t, kvledger.StatusPending, s.Status)
				require.Equal(t, []events.Name{kvledger.AdmittedEvent}, keyEvents(t, l, string(subs[i].Key)))
			}
			fresh := make([]kvledger.Submission, 2000)
			for i := range fresh {
				fresh[i] = kvledger.Submission{Key: kvledger.IdempotencyKey(fmt.Sprintf("f%d", i)), Kind: "bulk"}
			}
			start = time.Now()
			_, err = l.AdmitMany(ctx, "t", fresh)
			require.NoError(t, err)
			t.Logf("AdmitMany of %d new keys without needs: %v", len(fresh), time.Since(start))
			f, err := l.Claim(ctx, "t", "k5", "w", time.Minute, time.Now())
			require.NoError(t, err)
			s, _, _ := l.State(ctx, "k5")
			require.Equal(t, s.Fence, f)
			require.Greater(t, f, kvledger.FenceToken(1), "the fence starts at the insert's revision")
		})
	}
}

// AdmitMany's atomic batches store each admission with its transition's
// header: a durable consumer filtering by the header alone (no decoding)
// gets one event per admission.
func TestAdmitManyBatchWritesNameTheirTransition(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "batchev"})
	l := newLedger(t, store)
	subs := make([]kvledger.Submission, 1500)
	for i := range subs {
		subs[i] = kvledger.Submission{Key: kvledger.IdempotencyKey(fmt.Sprintf("a%d", i)), Seq: 1, Kind: "bulk"}
	}
	oks, err := l.AdmitMany(ctx, "t", subs)
	require.NoError(t, err)
	require.NotContains(t, oks, false)
	got := make(chan events.Event, len(subs))
	d, err := events.SubscribeDurable(ctx, n.JS, store.EventSource(), events.DurableConfig{
		Durable: "admitted", MaxAckPending: 1000,
		Filter: events.Filter{Names: []events.Name{kvledger.AdmittedEvent}},
	}, func(_ context.Context, e events.Event) error { got <- e; return nil }, func(err error) { t.Error(err) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	for range subs {
		e := natstest.Recv(t, got, 10*time.Second, "admission event")
		require.Equal(t, kvledger.AdmittedEvent, e.Name)
		require.Equal(t, "batchev", e.Source)
	}
}
