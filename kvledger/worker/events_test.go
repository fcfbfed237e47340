package worker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// A worker's writes are its events: a durable consumer on the ledger
// bucket's stream sees each task's admission, claim and outcome once, in
// write order, each linked to the key's previous write.
func TestWorkerEventsOncePerWriteInOrder(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	bucket := fmt.Sprintf("wevents%d", seq.Add(1))
	open := func() *kvledger.Ledger {
		js := n.NewJS(t)
		st, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: bucket})
		require.NoError(t, err)
		l, err := kvledger.New(st)
		require.NoError(t, err)
		return l
	}
	admit, run := open(), open()
	var (
		mu  sync.Mutex
		got = map[string][]events.Event{}
	)
	all := make(chan struct{}, 1)
	const tasks = 40
	d, err := events.SubscribeDurable(ctx, n.JS, kvledger.EventSource(bucket), events.DurableConfig{Durable: "wevents", OnGap: func(g events.Gap) { t.Error(g) }}, func(_ context.Context, e events.Event) error {
		mu.Lock()
		defer mu.Unlock()
		got[e.Key] = append(got[e.Key], e)
		done := 0
		for _, evs := range got {
			if len(evs) > 0 && evs[len(evs)-1].Name == kvledger.CompletedEvent {
				done++
			}
		}
		if done == tasks {
			select {
			case all <- struct{}{}:
			default:
			}
		}
		return nil
	}, func(err error) { t.Error(err) })
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	ci, err := n.JS.Consumer(ctx, "KV_"+bucket, "wevents")
	require.NoError(t, err)
	require.Contains(t, ci.CachedInfo().Config.Description, "natscoord events", "nats consumer ls says whose it is")

	w, err := worker.New(ctx, n.NewJS(t), run, worker.Config{LeaseBucket: "l" + bucket, Concurrency: 4})
	require.NoError(t, err)
	require.NoError(t, w.Handle("job", func(context.Context, *worker.Task) error { return nil }))
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, closeWorker(w)) })
	for i := range tasks {
		ok, err := admit.Submit(ctx, "test", kvledger.Submission{Key: kvledger.IdempotencyKey(fmt.Sprintf("k%d", i)), Kind: "job"})
		require.NoError(t, err)
		require.True(t, ok)
	}
	natstest.Recv(t, all, 30*time.Second, "every task's completion event")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, tasks)
	for k, evs := range got {
		names := make([]events.Name, len(evs))
		for i, e := range evs {
			names[i] = e.Name
			if i > 0 {
				require.Greater(t, e.Revision, evs[i-1].Revision, "%s: revisions rise", k)
				require.Equal(t, evs[i-1].Revision, e.PrevRevision, "%s: linked to the previous write", k)
			}
		}
		require.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent, kvledger.CompletedEvent}, names, k)
	}
}
