package kvx_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// prompt is how soon a change made after a reconnect must reach the
// hub's users: well within nats.go's own detection of a lost consumer
// (missed heartbeats, 10–20 s).
const prompt = 5 * time.Second

// restartable is a server the test stops and starts again, and a client
// connection that reconnects to it.
type restartable struct {
	*natstest.Restartable
	t  *testing.T
	nc *nats.Conn
}

func startRestartable(t *testing.T) *restartable {
	t.Helper()
	r := &restartable{Restartable: natstest.StartRestartable(t), t: t}
	var err error
	r.nc, err = nats.Connect(r.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(r.nc.Close)
	return r
}

// restart shuts the server down, starts it again and returns once the
// client has reconnected.
func (r *restartable) restart() {
	r.t.Helper()
	back := r.nc.StatusChanged(nats.CONNECTED)
	defer r.nc.RemoveStatusListener(back)
	r.Restart()
	natstest.Recv(r.t, back, 30*time.Second, "the client to reconnect")
}

// create writes a new key, retrying while the restarted server's
// JetStream is not answering yet (bounded); a try whose answer was lost
// is found by reading the key.
func create(t *testing.T, b *kvx.Bucket, key, value string) uint64 {
	t.Helper()
	var rev uint64
	natstest.Eventually(t, 20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r, err := b.Create(ctx, key, []byte(value), 0)
		if errors.Is(err, kvx.ErrConflict) {
			e, gerr := b.Get(ctx, key)
			r, err = e.Revision, gerr
		}
		rev = r
		return err == nil
	}, "write %s", key)
	return rev
}

// After the server restarts (its consumers gone), a change made once
// the client is back reaches a hub's feed and Subs at once, not when
// nats.go's heartbeat check finds the watch's consumer lost; the feed
// goes on where it was: nothing before the restart again, no Resync,
// only a Resumed marker before the new change.
func TestHubResumesAfterServerRestart(t *testing.T) {
	r := startRestartable(t)
	js := natstest.JetStream(t, r.nc)
	b := openBucket(t, js, 1)
	ctx := natstest.Context(t, 60*time.Second)
	r1 := create(t, b, "a", "1")

	h, f := viewFeed(t, ctx, b, "", 64)
	items := natstest.TakeFeed[kvx.FeedItem](t, f, prompt)
	require.Len(t, items, 2)
	require.Equal(t, r1, items[0].Revision)
	require.True(t, items[1].Synced)
	sub, err := h.Subscribe(ctx, "b")
	require.NoError(t, err)
	defer sub.Close()

	r.restart()
	start := time.Now()
	r2 := create(t, b, "b", "2")
	// The hub resumed: its Sub is still subscribed and gets the change.
	e := natstest.Recv(t, sub.C(), prompt, "the change made after the restart, on the Sub")
	require.Equal(t, r2, e.Revision)
	items = natstest.TakeFeed[kvx.FeedItem](t, f, prompt-time.Since(start))
	if len(items) == 1 { // the change and the marker taken apart
		items = append(items, natstest.TakeFeed[kvx.FeedItem](t, f, prompt-time.Since(start))...)
	}
	require.Len(t, items, 2, "the Resumed marker and the new change: %+v", items)
	require.Equal(t, kvx.FeedItem{Resumed: true}, items[0])
	require.Equal(t, "b", items[1].Key)
	require.Equal(t, r2, items[1].Revision)
	require.Less(t, time.Since(start), prompt)
	require.Equal(t, 1, natstest.BucketConsumers(t, js, b.Name()), "the replaced watch's consumer is gone")
}

// A reconnect whose server kept the watch's consumer (a blip): the hub
// replaces the watch all the same, delivers every change once, in
// order, and deletes the consumer it replaced.
func TestHubReplacesWatchAfterBlip(t *testing.T) {
	r := startRestartable(t)
	js := natstest.JetStream(t, r.nc)
	b := openBucket(t, js, 1)
	ctx := natstest.Context(t, 60*time.Second)
	create(t, b, "k", "0")

	_, f := viewFeed(t, ctx, b, "", 1000)
	items := natstest.TakeFeed[kvx.FeedItem](t, f, prompt)
	require.Len(t, items, 2)
	last := items[0].Revision

	w := natstest.JetStream(t, natstest.Connect(t, r.Server)) // a writer on a connection of its own
	wb := openBucket(t, w, 1)
	back := r.nc.StatusChanged(nats.CONNECTED)
	defer r.nc.RemoveStatusListener(back)
	const n = 50
	var want []uint64
	for i := range n {
		if i == n/2 {
			require.NoError(t, r.nc.ForceReconnect())
		}
		// A key each: a bucket keeps one value per key, so a watch
		// that resumes finds a key's superseded values gone.
		rev, err := wb.Create(ctx, "k"+strconv.Itoa(i), []byte("v"), 0)
		require.NoError(t, err)
		want = append(want, rev)
	}
	natstest.Recv(t, back, 30*time.Second, "the client to reconnect")
	var revs []uint64
	for len(revs) < n {
		for _, it := range natstest.TakeFeed[kvx.FeedItem](t, f, prompt) {
			require.False(t, it.Resync || it.Synced, "no catch-up: %+v", it)
			if it.Resumed {
				continue // the replacement's marker, between two changes
			}
			require.Greater(t, it.Revision, last, "each change once, in order")
			last = it.Revision
			revs = append(revs, it.Revision)
		}
	}
	require.Equal(t, want, revs)
	natstest.Eventually(t, prompt, func() bool { return natstest.BucketConsumers(t, js, b.Name()) == 1 },
		"the replaced watch's consumer deleted")
}

// A hub that has delivered no change since its watch started does not
// know where to resume: after a server restart it restarts its watch at
// once. Its Subs are released (they subscribe again) and its feeds catch
// up; a change made after the restart reaches both promptly.
func TestHubRestartsAfterServerRestartWithNothingDelivered(t *testing.T) {
	r := startRestartable(t)
	js := natstest.JetStream(t, r.nc)
	b := openBucket(t, js, 1)
	ctx := natstest.Context(t, 60*time.Second)

	h, f := viewFeed(t, ctx, b, "", 64)
	items := natstest.TakeFeed[kvx.FeedItem](t, f, prompt)
	require.Len(t, items, 1)
	require.True(t, items[0].Synced, "an empty bucket")
	sub, err := h.Subscribe(ctx, "b")
	require.NoError(t, err)
	defer sub.Close()

	r.restart()
	start := time.Now()
	select {
	case _, ok := <-sub.C():
		require.False(t, ok, "released, not sent a change")
	case <-time.After(prompt):
		t.Fatalf("the Sub was not released within %v of the reconnect", prompt)
	}
	sub, err = h.Subscribe(ctx, "b")
	require.NoError(t, err)
	defer sub.Close()
	rev := create(t, b, "b", "2")
	e := natstest.Recv(t, sub.C(), prompt-time.Since(start), "the change made after the restart, on the Sub")
	require.Equal(t, rev, e.Revision)
	var keys []string
	for !slices.Contains(keys, "b") {
		for _, it := range natstest.TakeFeed[kvx.FeedItem](t, f, prompt-time.Since(start)) {
			if it.Key != "" {
				keys = append(keys, it.Key)
			}
		}
	}
	require.Equal(t, []string{"b"}, keys, "the new key once")
}

// A reconnect while the hub's watch is starting (or just started) is
// not missed, and leaves one watch: each round's feed gets a change made
// after the reconnect promptly, the bucket has one consumer while the
// hub runs and none after its Close.
func TestHubReconnectDuringStart(t *testing.T) {
	r := startRestartable(t)
	js := natstest.JetStream(t, r.nc)
	b := openBucket(t, js, 1)
	for i := range 4 {
		h := b.NewHub(">")
		h.KeepView("")
		back := r.nc.StatusChanged(nats.CONNECTED)
		require.NoError(t, r.nc.ForceReconnect())
		// A start whose request the reconnect cut off fails: the
		// caller's error, tried again here.
		f := natstest.Open(t, "feed", func(ctx context.Context) (*kvx.Feed, error) { return h.Feed(ctx, "", nil, 64) })
		natstest.Recv(t, back, 30*time.Second, "the client to reconnect")
		r.nc.RemoveStatusListener(back)
		key := "r" + strconv.Itoa(i)
		start := time.Now()
		create(t, b, key, "v")
		var keys []string
		for !slices.Contains(keys, key) {
			for _, it := range natstest.TakeFeed[kvx.FeedItem](t, f, prompt-time.Since(start)) {
				keys = append(keys, it.Key)
			}
		}
		natstest.Eventually(t, prompt, func() bool { return natstest.BucketConsumers(t, js, b.Name()) == 1 }, "one watch")
		f.Close()
		require.NoError(t, h.Close())
		natstest.Eventually(t, prompt, func() bool { return natstest.BucketConsumers(t, js, b.Name()) == 0 }, "no watch after Close")
	}
}

// A hub closed while it replaces its watch after a reconnect ends the
// replacement: no watch, consumer or goroutine outlives its Close (the
// package's leak check).
func TestHubCloseDuringReplacement(t *testing.T) {
	r := startRestartable(t)
	js := natstest.JetStream(t, r.nc)
	b := openBucket(t, js, 1)
	ctx := natstest.Context(t, 60*time.Second)
	create(t, b, "a", "1")
	for range 4 {
		h := b.NewHub(">")
		h.KeepView("")
		f, err := h.Feed(ctx, "", nil, 64)
		require.NoError(t, err)
		natstest.TakeFeed[kvx.FeedItem](t, f, prompt)
		back := r.nc.StatusChanged(nats.CONNECTED)
		require.NoError(t, r.nc.ForceReconnect())
		natstest.Recv(t, back, 30*time.Second, "the client to reconnect")
		r.nc.RemoveStatusListener(back)
		f.Close()
		require.NoError(t, h.Close())
		natstest.Eventually(t, prompt, func() bool { return natstest.BucketConsumers(t, js, b.Name()) == 0 }, "no watch after Close")
	}
}
