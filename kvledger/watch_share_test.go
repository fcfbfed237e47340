package kvledger_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// TestRecordWatchersShareOneConsumer: two WaitFinal calls and a tally
// (what tasks.Client.Counts keeps) in one process cost the server one
// consumer on the ledger bucket, and none once they have all ended.
func TestRecordWatchersShareOneConsumer(t *testing.T) {
	n := natstest.WithServer(t)
	const bucket = "share"
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: bucket})
	l := newLedger(t, s, nil)
	ctx := natstest.Context(t, 20*time.Second)
	for _, k := range []kvledger.IdempotencyKey{"a", "b"} {
		ok, err := l.Admit(ctx, "t", k, 1, nil, t0)
		require.NoError(t, err)
		require.True(t, ok)
	}

	tally := kvledger.NewTally()
	synced := make(chan struct{})
	var once sync.Once
	tw, err := s.WatchRecords(ctx, func(c kvledger.Change) {
		if c.Synced {
			once.Do(func() { close(synced) })
		}
		tally.Apply(c, t0)
	})
	require.NoError(t, err)
	natstest.WaitClosed(t, synced, 10*time.Second, "the tally's records")
	require.Equal(t, 2, tally.Counts(t0).Total, "the tally holds both records")

	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, k := range []kvledger.IdempotencyKey{"a", "b"} {
		wg.Go(func() {
			_, err := l.WaitFinal(wctx, k)
			require.ErrorIs(t, err, context.Canceled)
		})
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return kvledger.RecordWatchers(s) == 3 }, "two waits and the tally watch")
	require.Equal(t, 1, natstest.BucketConsumers(t, n.JS, bucket), "three watchers, one consumer")

	cancel()
	wg.Wait()
	tw.Stop()
	require.Zero(t, kvledger.RecordWatchers(s))
	natstest.Eventually(t, 10*time.Second, func() bool { return natstest.BucketConsumers(t, n.JS, bucket) == 0 },
		"the last watcher's end stops the watch")
}

// TestSlowRecordWatcherCatchesUp: a watcher whose fn blocks does not
// hold up another watcher of the same store; once it has fallen further
// behind than its queue holds, it is caught up: Resync, the current
// record of every key it has not seen at its revision, a deletion for a
// record it saw that went meanwhile, and Synced. Its copy then equals
// the store.
func TestSlowRecordWatcherCatchesUp(t *testing.T) {
	kvledger.SetRecordFeedLimit(t, 4)
	n := natstest.WithServer(t)
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	l := newLedger(t, s, nil)
	ctx := natstest.Context(t, 30*time.Second)
	admit := func(i int) {
		ok, err := l.Admit(ctx, "t", kvledger.IdempotencyKey(fmt.Sprint("k", i)), 1, nil, t0)
		require.NoError(t, err)
		require.True(t, ok)
	}
	admit(0)

	var (
		mu      sync.Mutex
		copyOf  = map[kvledger.IdempotencyKey]uint64{} // the slow watcher's copy
		resyncs int
	)
	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	blocked := make(chan struct{})
	caughtUp := make(chan struct{}, 1)
	slow, err := s.WatchRecords(ctx, func(c kvledger.Change) {
		if c.Key == "k1" && !c.Deleted {
			close(blocked)
			<-release
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case c.Resync:
			resyncs++
		case c.Synced:
			if resyncs > 0 {
				select {
				case caughtUp <- struct{}{}:
				default:
				}
			}
		case c.Deleted:
			delete(copyOf, c.Key)
		case c.Key != "":
			copyOf[c.Key] = c.Rev
		}
	})
	require.NoError(t, err)
	defer slow.Stop()
	defer unblock() // before Stop, which waits for fn

	// The fast watcher keeps its own copy; it may be caught up too (its
	// queue is as short), but it is never held up by the slow one.
	var fastMu sync.Mutex
	fastCopy := map[kvledger.IdempotencyKey]uint64{}
	fw, err := s.WatchRecords(ctx, func(c kvledger.Change) {
		fastMu.Lock()
		defer fastMu.Unlock()
		switch {
		case c.Key == "":
		case c.Deleted:
			delete(fastCopy, c.Key)
		default:
			fastCopy[c.Key] = c.Rev
		}
	})
	require.NoError(t, err)
	defer fw.Stop()

	admit(1)
	natstest.WaitClosed(t, blocked, 10*time.Second, "the slow watcher blocks on k1")
	for i := 2; i < 12; i++ {
		admit(i)
	}
	rec0, ok, err := s.Load(ctx, "k0")
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = s.DeleteRecord(ctx, "k0", rec0)
	require.NoError(t, err)
	require.True(t, ok)
	want := map[kvledger.IdempotencyKey]uint64{}
	require.NoError(t, s.Range(ctx, func(r kvledger.TaskState) bool { want[r.Key] = r.Rev; return true }))
	require.Len(t, want, 11)
	natstest.Eventually(t, 10*time.Second, func() bool {
		fastMu.Lock()
		defer fastMu.Unlock()
		return maps.Equal(want, fastCopy)
	}, "the fast watcher follows every change while the slow one is blocked")

	unblock()
	natstest.Recv(t, caughtUp, 10*time.Second, "the slow watcher's catch-up")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, resyncs)
	require.Equal(t, want, copyOf, "the caught-up copy equals the store: k0 deleted, k1..k11 at their revisions")
}

// consumerFilters returns the filter subjects of the consumers on a
// ledger bucket's stream.
func consumerFilters(t *testing.T, js jetstream.JetStream, bucket string) [][]string {
	t.Helper()
	ctx := natstest.Context(t, 5*time.Second)
	st, err := js.Stream(ctx, "KV_"+bucket)
	require.NoError(t, err)
	var out [][]string
	l := st.ListConsumers(ctx)
	for ci := range l.Info() {
		f := ci.Config.FilterSubjects
		if ci.Config.FilterSubject != "" {
			f = append(f, ci.Config.FilterSubject)
		}
		out = append(out, f)
	}
	require.NoError(t, l.Err())
	return out
}

// TestKeyedRecordWatchersReadTheirKeysOnly: watchers that name keys
// (WaitFinal's) share a watch of those keys only, not of the whole
// ledger; a watcher of every record widens it. Each restart of the shared
// watch catches the others up without a change they did not see: the
// first watcher sees its record, then its deletion, and nothing else.
func TestKeyedRecordWatchersReadTheirKeysOnly(t *testing.T) {
	n := natstest.WithServer(t)
	const bucket = "keyed"
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: bucket})
	l := newLedger(t, s, nil)
	ctx := natstest.Context(t, 20*time.Second)
	for _, k := range []kvledger.IdempotencyKey{"a", "b", "c"} {
		ok, err := l.Admit(ctx, "t", k, 1, nil, t0)
		require.NoError(t, err)
		require.True(t, ok)
	}
	subj := func(k string) string { return "$KV." + bucket + "." + kvledger.TaskKey(kvledger.IdempotencyKey(k)) }

	var mu sync.Mutex
	var seenA []string
	synced := make(chan struct{}, 8)
	wa, err := s.WatchRecords(ctx, func(c kvledger.Change) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case c.Synced:
			synced <- struct{}{}
		case c.Key != "":
			seenA = append(seenA, fmt.Sprintf("%s deleted=%v", c.Key, c.Deleted))
		}
	}, "a")
	require.NoError(t, err)
	defer wa.Stop()
	natstest.Recv(t, synced, 10*time.Second, "a's watch synced")
	require.Equal(t, [][]string{{subj("a")}}, consumerFilters(t, n.JS, bucket), "one key, one filter subject")

	wb, err := s.WatchRecords(ctx, func(kvledger.Change) {}, "b")
	require.NoError(t, err)
	defer wb.Stop()
	natstest.Eventually(t, 10*time.Second, func() bool {
		f := consumerFilters(t, n.JS, bucket)
		return len(f) == 1 && len(f[0]) == 2
	}, "the watch restarted on both keys")

	all, err := s.WatchRecords(ctx, func(kvledger.Change) {})
	require.NoError(t, err)
	defer all.Stop()
	natstest.Eventually(t, 10*time.Second, func() bool {
		f := consumerFilters(t, n.JS, bucket)
		return len(f) == 1 && len(f[0]) == 3 && slices.Contains(f[0], "$KV."+bucket+".task.*") && slices.Contains(f[0], "$KV."+bucket+".sched.*") &&
			slices.Contains(f[0], "$KV."+bucket+".ctl.pause.*")
	}, "a watcher of every record widens the watch to the store's patterns (records, schedules and paused kinds)")

	rec, ok, err := s.Load(ctx, "a")
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = s.DeleteRecord(ctx, "a", rec)
	require.NoError(t, err)
	require.True(t, ok)
	natstest.Eventually(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seenA) == 2
	}, "a's deletion")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"a deleted=false", "a deleted=true"}, seenA)
}
