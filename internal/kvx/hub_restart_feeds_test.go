package kvx_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// takeUntil waits (bounded by d) for an item of key at rev or later; false if none came.
func takeUntil(t *testing.T, f *kvx.Feed, key string, rev uint64, d time.Duration) bool {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case <-f.Ready():
		case <-deadline:
			return false
		}
		items, err := f.Take()
		require.NoError(t, err)
		for _, it := range items {
			if it.Key == key && it.Revision >= rev {
				return true
			}
		}
	}
}

// A FeedKeys whose ctx has ended, stopping the running watch to widen
// it, still starts its successor: the other feeds go on (they were left
// lagged with no watch behind them).
func TestFeedKeysWithEndedCtxLeavesOtherFeedsWatched(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 20*time.Second)
	_, err := b.Create(ctx, "k.a", []byte("a1"), 0)
	require.NoError(t, err)
	h := b.NewHub(">")
	h.KeepView("")
	h.FilterUpTo(8)
	t.Cleanup(func() { _ = h.Close() })
	fa, err := h.FeedKeys(ctx, "", []string{"k.a"}, 16)
	require.NoError(t, err)
	defer fa.Close()
	natstest.TakeFeed[kvx.FeedItem](t, fa, 5*time.Second)

	dead, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = h.FeedKeys(dead, "", []string{"k.b"}, 16)
	require.ErrorIs(t, err, context.Canceled)

	e, _ := b.Get(ctx, "k.a")
	rev, err := b.Update(ctx, "k.a", []byte("a2"), e.Revision, 0)
	require.NoError(t, err)
	require.True(t, takeUntil(t, fa, "k.a", rev, 5*time.Second),
		"feed k.a stranded: hub running=%v feeds=%d", h.Running(), h.Feeds())
}

// The same through SyncTo: a view widened by KeepView, synced with an
// ended ctx, restarts the watch for the feeds waiting on it.
func TestSyncToWithEndedCtxLeavesFeedsWatched(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 20*time.Second)
	_, err := b.Create(ctx, "x.a", []byte("a1"), 0)
	require.NoError(t, err)
	h, fa := viewFeed(t, ctx, b, "x", 16)
	natstest.TakeFeed[kvx.FeedItem](t, fa, 5*time.Second)
	h.KeepView("y")

	dead, cancel := context.WithCancel(context.Background())
	cancel()
	require.Error(t, h.SyncTo(dead, 1))

	e, _ := b.Get(ctx, "x.a")
	rev, err := b.Update(ctx, "x.a", []byte("a2"), e.Revision, 0)
	require.NoError(t, err)
	require.True(t, takeUntil(t, fa, "x.a", rev, 5*time.Second),
		"feed x stranded: hub running=%v", h.Running())
}

// A restart whose successor watch cannot start (the server stalled past
// the op timeout) ends the feeds waiting for it with the reason, not a
// bare ErrFeedEnded: their owner (a worker's lease feed) reports why.
func TestFeedEndedByAFailedRestartSaysWhy(t *testing.T) {
	_, p, b, ctx := proxiedBucket(t, 300*time.Millisecond)
	_, err := b.Create(ctx, "x.a", []byte("a1"), 0)
	require.NoError(t, err)
	h, fa := viewFeed(t, ctx, b, "x", 16)
	natstest.TakeFeed[kvx.FeedItem](t, fa, 5*time.Second)

	h.KeepView("y") // the next SyncTo restarts the watch with y's values
	p.Stall(true)
	t.Cleanup(func() { p.Stall(false) })
	require.Error(t, h.SyncTo(ctx, 1))
	natstest.Eventually(t, 10*time.Second, func() bool {
		select {
		case <-fa.Ready():
		default:
		}
		_, err = fa.Take()
		return err != nil
	}, "the feed ends")
	require.ErrorIs(t, err, kvx.ErrFeedEnded)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the feed's end names why the watch did not start again")
}
