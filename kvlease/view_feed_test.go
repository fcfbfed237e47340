package kvlease_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// A View's feed rides the manager's one watch: it starts with the
// current values, survives the watch's restart when another layer adds a
// view (a Resync that brings nothing it already has, then Synced), and
// goes on with every change, in order, on one consumer.
func TestViewFeedSurvivesTheWatchRestart(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	m := newManager(t, n.JS, kvlease.Config{Holder: "one"})
	g1, ok, err := m.TryAcquireKey(ctx, "app.k1", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	v, err := m.View("app")
	require.NoError(t, err)
	f, err := v.Feed(ctx, nil, 16)
	require.NoError(t, err)
	defer f.Close()
	items := natstest.TakeFeed[kvlease.FeedItem](t, f, 10*time.Second)
	require.Len(t, items, 2)
	require.Equal(t, "app.k1", items[0].Key)
	require.Equal(t, g1.Revision(), items[0].Revision)
	require.True(t, items[1].Synced)

	other, err := m.View("other")
	require.NoError(t, err)
	require.NoError(t, other.SyncTo(ctx, g1.Revision())) // restarts the watch with "other" covered
	items = natstest.TakeFeed[kvlease.FeedItem](t, f, 10*time.Second)
	require.Equal(t, []kvlease.FeedItem{{Resync: true}, {Synced: true}}, items, "nothing changed while the watch restarted")

	require.NoError(t, g1.Release(ctx))
	g2, ok, err := m.TryAcquireKey(ctx, "app.k2", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	var got []kvlease.FeedItem
	for len(got) < 2 {
		got = append(got, natstest.TakeFeed[kvlease.FeedItem](t, f, 10*time.Second)...)
	}
	require.Equal(t, "app.k1", got[0].Key)
	require.False(t, got[0].Live(), "the release")
	require.Equal(t, "app.k2", got[1].Key)
	require.Equal(t, g2.Revision(), got[1].Revision)
	require.Equal(t, 1, natstest.BucketConsumers(t, n.JS, m.Bucket()))
	require.NoError(t, g2.Release(ctx))
}
