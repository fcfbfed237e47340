package kvx_test

import (
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
