package kvledger_test

import (
	"fmt"
	"sync/atomic"
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
			log, bus := newRecorder()
			l, err := kvledger.New(store, bus)
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
				require.Contains(t, log.byKey(string(subs[i].Key)), kvledger.AdmittedEvent)
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

// AdmitMany with the JetStream bus sends a batch's events together and
// returns once all are stored: each admission's event is in the stream
// once. With the stream gone the admissions stand, every event is
// reported to the publish-error handler, and the call still returns
// within its bound (one operation timeout for the batch's events).
func TestAdmitManyPublishesTheBatchsEvents(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	require.NoError(t, store.EnableAtomicBatches(ctx))
	bus, err := events.NewJetStreamBus(ctx, n.JS, events.JetStreamBusConfig{Stream: "BATCHEV", SubjectPrefix: "batchev."})
	require.NoError(t, err)
	var failed atomic.Int64
	l := newLedger(t, store, bus, kvledger.WithPublishErrorHandler(func(kvledger.IdempotencyKey, uint64, error) { failed.Add(1) }))

	subs := func(prefix string, count int) []kvledger.Submission {
		out := make([]kvledger.Submission, count)
		for i := range out {
			out[i] = kvledger.Submission{Key: kvledger.IdempotencyKey(fmt.Sprintf("%s%d", prefix, i)), Seq: 1, Kind: "bulk"}
		}
		return out
	}
	oks, err := l.AdmitMany(ctx, "t", subs("a", 2500))
	require.NoError(t, err)
	require.NotContains(t, oks, false)
	s, err := n.JS.Stream(ctx, "BATCHEV")
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2500, info.State.Msgs, "one event per admission")
	require.Zero(t, failed.Load())

	require.NoError(t, n.JS.DeleteStream(ctx, "BATCHEV"))
	start := time.Now()
	oks, err = l.AdmitMany(ctx, "t", subs("b", 1500))
	require.NoError(t, err, "the admissions are the commit point")
	require.NotContains(t, oks, false)
	require.EqualValues(t, 1500, failed.Load(), "every unpublished event reported")
	bound := 2 * (store.OpTimeout() + 5*time.Second) // two batches, each: insert, then its events
	require.Less(t, time.Since(start), bound)
	_, found, err := l.State(ctx, "b1499")
	require.NoError(t, err)
	require.True(t, found)
}
