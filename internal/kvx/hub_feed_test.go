package kvx_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// A feed delivers the current values, Synced, then every change as the
// watch reads it (a delete marker as OpDelete); a feed started later is
// served from the hub's view, on the same consumer.
func TestFeedOrderedFromOneWatch(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 10*time.Second)
	r, err := b.Create(ctx, "fw", []byte("v"), 0)
	require.NoError(t, err)

	h := b.NewHub(">")
	h.KeepView("")
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	f, err := h.Feed(ctx, "", nil, 16)
	require.NoError(t, err)
	defer f.Close()
	items := natstest.TakeFeed[kvx.FeedItem](t, f, 5*time.Second)
	require.Len(t, items, 2)
	e := items[0].Entry
	require.Equal(t, kvx.Entry{Key: "fw", Value: []byte("v"), Revision: r, Op: kvx.OpPut, Created: e.Created}, e)
	require.True(t, items[1].Synced)

	m, err := b.Delete(ctx, "fw", r)
	require.NoError(t, err)
	items = natstest.TakeFeed[kvx.FeedItem](t, f, 5*time.Second)
	require.Len(t, items, 1)
	require.Equal(t, kvx.OpDelete, items[0].Op)
	require.Equal(t, m, items[0].Revision)

	r2, err := b.Create(ctx, "fx", []byte("w"), 0)
	require.NoError(t, err)
	require.Equal(t, "fx", natstest.TakeFeed[kvx.FeedItem](t, f, 5*time.Second)[0].Key)
	late, err := h.Feed(ctx, "", nil, 16)
	require.NoError(t, err)
	defer late.Close()
	items = natstest.TakeFeed[kvx.FeedItem](t, late, 5*time.Second)
	require.Len(t, items, 2, "the live key from the view, then Synced")
	require.Equal(t, r2, items[0].Revision)
	require.True(t, items[1].Synced)
	require.Equal(t, 1, natstest.BucketConsumers(t, n.JS, b.Name()), "two feeds, one watch")
}

// A hub of several patterns (or one that filters by keys) starts its
// watch again after an idle stop: its patterns and filter are the keys
// it was given each time, not the subjects a former watch made of them.
func TestHubOfPatternsRestarts(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 10*time.Second)
	_, err := b.Create(ctx, "a.x", []byte("v"), 0)
	require.NoError(t, err)
	_, err = b.Create(ctx, "b.y", []byte("w"), 0)
	require.NoError(t, err)

	h := b.NewHub("a.*", "b.*")
	h.KeepView("")
	h.StopWhenIdle()
	h.FilterUpTo(4)
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	for i := range 2 {
		f, err := h.Feed(ctx, "", nil, 16)
		require.NoError(t, err, "feed of every key, start %d", i)
		require.Len(t, natstest.TakeFeed[kvx.FeedItem](t, f, 5*time.Second), 3, "both keys and Synced, start %d", i)
		f.Close()
		f, err = h.FeedKeys(ctx, "", []string{"b.y"}, 16)
		require.NoError(t, err, "feed of one key, start %d", i)
		require.Len(t, natstest.TakeFeed[kvx.FeedItem](t, f, 5*time.Second), 2, "the key and Synced, start %d", i)
		f.Close()
	}
}

// A feed of named keys that falls behind is caught up from the view by
// looking its keys up (each once, however often it was named): their
// current values, a delete for the one that went, and nothing of the
// keys it does not name.
func TestFeedKeysCatchUp(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 10*time.Second)
	ra, err := b.Create(ctx, "k.a", []byte("a1"), 0)
	require.NoError(t, err)
	rb, err := b.Create(ctx, "k.b", []byte("b1"), 0)
	require.NoError(t, err)

	h := b.NewHub(">")
	h.KeepView("")
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	f, err := h.FeedKeys(ctx, "", []string{"k.a", "k.b", "k.a"}, 1)
	require.NoError(t, err)
	defer f.Close()
	items := natstest.TakeFeed[kvx.FeedItem](t, f, 5*time.Second)
	require.Len(t, items, 3, "k.a and k.b once each, then Synced")
	require.True(t, items[2].Synced)
	// every change reaches all, which tells when the hub has pushed the
	// last one to f too (one lock, one order).
	all, err := h.Feed(ctx, "", nil, 64)
	require.NoError(t, err)
	defer all.Close()
	natstest.TakeFeed[kvx.FeedItem](t, all, 5*time.Second)

	_, err = b.Delete(ctx, "k.b", rb)
	require.NoError(t, err)
	ra, err = b.Update(ctx, "k.a", []byte("a2"), ra, 0)
	require.NoError(t, err)
	ra, err = b.Update(ctx, "k.a", []byte("a3"), ra, 0)
	require.NoError(t, err)
	rc, err := b.Create(ctx, "k.c", []byte("c1"), 0)
	require.NoError(t, err)
	for last := uint64(0); last < rc; {
		for _, it := range natstest.TakeFeed[kvx.FeedItem](t, all, 5*time.Second) {
			last = max(last, it.Revision)
		}
	}

	items = natstest.TakeFeed[kvx.FeedItem](t, f, 5*time.Second)
	require.Len(t, items, 4, "Resync, k.a's latest, k.b's delete (at the view's revision), Synced: %+v", items)
	require.True(t, items[0].Resync)
	require.Equal(t, "k.a", items[1].Key)
	require.Equal(t, ra, items[1].Revision)
	require.Equal(t, []byte("a3"), items[1].Value)
	require.Equal(t, "k.b", items[2].Key)
	require.Equal(t, kvx.OpDelete, items[2].Op)
	require.Equal(t, rc, items[2].Revision)
	require.True(t, items[3].Synced)
}

// Each hands every change in order with its own value while the feed's
// two queues take turns under it.
func TestFeedEachInOrder(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 20*time.Second)
	h := b.NewHub(">")
	h.KeepView("")
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	f, err := h.Feed(ctx, "", nil, 1<<12)
	require.NoError(t, err)
	defer f.Close()
	const count = 300
	got := make(chan kvx.FeedItem, count+1)
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- f.Each(stop, func(it kvx.FeedItem) bool { got <- it; return true }) }()
	require.True(t, (<-got).Synced)
	revs := make([]uint64, count)
	for i := range count {
		revs[i], err = b.Create(ctx, fmt.Sprintf("e.%d", i), []byte(strconv.Itoa(i)), 0)
		require.NoError(t, err)
	}
	for i := range count {
		select {
		case it := <-got:
			require.Equal(t, fmt.Sprintf("e.%d", i), it.Key)
			require.Equal(t, revs[i], it.Revision)
			require.Equal(t, strconv.Itoa(i), string(it.Value))
		case <-ctx.Done():
			t.Fatalf("change %d of %d not delivered", i, count)
		}
	}
	close(stop)
	require.NoError(t, <-done)
}

// Close, from another goroutine, wakes a reader waiting in Each for the
// next change: Each returns nil (its owner asked for the end), with no
// stop channel of the reader's own, and Take then says the feed is
// closed.
func TestFeedCloseEndsEach(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 10*time.Second)
	_, err := b.Create(ctx, "c.1", []byte("v"), 0)
	require.NoError(t, err)
	h, f := viewFeed(t, ctx, b, "", 16)

	synced := make(chan struct{})
	var syncedOnce sync.Once // a second Synced item must not close it again
	done := make(chan error, 1)
	go func() {
		done <- f.Each(nil, func(it kvx.FeedItem) bool {
			if it.Synced {
				syncedOnce.Do(func() { close(synced) })
			}
			return true
		})
	}()
	natstest.WaitClosed(t, synced, 5*time.Second, "the feed synced") // the reader now waits for a change that never comes
	f.Close()
	require.NoError(t, natstest.Recv(t, done, 5*time.Second, "Each returning after Close"), "Close asked for the end")
	_, err = f.Take()
	require.ErrorIs(t, err, kvx.ErrHubClosed)
	require.Zero(t, h.Feeds())
}

// A feed whose watch restarts (another feed widens the filter) catches
// up by comparing the refilled view with what its reader holds: the
// changed key, a delete for the key that went, nothing for the one that
// stayed as it was.
func TestFeedCatchUpAfterRestart(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 10*time.Second)
	ra, err := b.Create(ctx, "x.a", []byte("a1"), 0)
	require.NoError(t, err)
	_, err = b.Create(ctx, "x.b", []byte("b1"), 0)
	require.NoError(t, err)
	rc, err := b.Create(ctx, "x.c", []byte("c1"), 0)
	require.NoError(t, err)

	h := b.NewHub(">")
	h.KeepView("")
	h.FilterUpTo(8)
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	f, err := h.FeedKeys(ctx, "", []string{"x.a", "x.b", "x.c"}, 64)
	require.NoError(t, err)
	defer f.Close()
	require.Len(t, natstest.TakeFeed[kvx.FeedItem](t, f, 5*time.Second), 4, "three keys, then Synced")

	ra, err = b.Update(ctx, "x.a", []byte("a2"), ra, 0)
	require.NoError(t, err)
	_, err = b.Delete(ctx, "x.c", rc)
	require.NoError(t, err)
	// A feed of a key the running watch does not read restarts it.
	g, err := h.FeedKeys(ctx, "", []string{"x.d"}, 64)
	require.NoError(t, err)
	defer g.Close()

	items := natstest.TakeFeed[kvx.FeedItem](t, f, 5*time.Second)
	require.Len(t, items, 4, "Resync, x.a's new value, x.c's delete, Synced: %+v", items)
	require.True(t, items[0].Resync)
	require.Equal(t, "x.a", items[1].Key)
	require.Equal(t, ra, items[1].Revision)
	require.Equal(t, "x.c", items[2].Key)
	require.Equal(t, kvx.OpDelete, items[2].Op)
	require.True(t, items[3].Synced)
}

// A feed that lags while a key comes and goes catches up with a delete
// of that key, which its reader never held: the feed notes the keys it
// did not hand out, not what its reader holds (a delete of an unknown
// key is nothing to every reader).
func TestFeedCatchUpDeletesAKeyThatCameAndWent(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 10*time.Second)
	h := b.NewHub(">")
	h.KeepView("")
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	f, err := h.Feed(ctx, "", nil, 1)
	require.NoError(t, err)
	defer f.Close()
	require.True(t, natstest.TakeFeed[kvx.FeedItem](t, f, 5*time.Second)[0].Synced)
	all, err := h.Feed(ctx, "", nil, 64)
	require.NoError(t, err)
	defer all.Close()
	natstest.TakeFeed[kvx.FeedItem](t, all, 5*time.Second)

	r, err := b.Create(ctx, "c.a", []byte("1"), 0)
	require.NoError(t, err)
	_, err = b.Delete(ctx, "c.a", r)
	require.NoError(t, err)
	// Two more keys: more changes than the feed's limit of 1 under
	// distinct keys, so it lags however the hub batches them (a batch
	// holding c.a's create and delete alone could fit the limit).
	_, err = b.Create(ctx, "c.b", []byte("1"), 0)
	require.NoError(t, err)
	r, err = b.Create(ctx, "c.c", []byte("1"), 0)
	require.NoError(t, err)
	for last := uint64(0); last < r; {
		for _, it := range natstest.TakeFeed[kvx.FeedItem](t, all, 5*time.Second) {
			last = max(last, it.Revision)
		}
	}
	var items []kvx.FeedItem
	for len(items) == 0 || !items[len(items)-1].Synced {
		items = append(items, natstest.TakeFeed[kvx.FeedItem](t, f, 5*time.Second)...)
	}
	require.True(t, items[0].Resync, "the feed lagged: %+v", items)
	var deleted bool
	for _, it := range items {
		deleted = deleted || it.Key == "c.a" && it.Op == kvx.OpDelete
	}
	require.True(t, deleted, "c.a's delete, which the reader never held: %+v", items)
}
