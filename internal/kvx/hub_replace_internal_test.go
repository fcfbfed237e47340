package kvx

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// blockedWatchDeliveries counts nats.go watch callbacks blocked sending
// on a watch's full updates channel.
func blockedWatchDeliveries() int {
	buf := make([]byte, 1<<22)
	n := runtime.Stack(buf, true)
	c := 0
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		if strings.Contains(g, "chan send") && strings.Contains(g, "jetstream.(*kvs).WatchFiltered.func") {
			c++
		}
	}
	return c
}

// A watch a start made but does not keep (its only caller gave up, on a
// hub that stops when idle) is drained as it ends: with more initial
// values than its channel holds, nats.go's delivery was left blocked on
// it for good.
func TestStartDropsAWatchItDoesNotKeepWhole(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	b, err := Open(ctx, n.JS, Config{Bucket: "drop"})
	require.NoError(t, err)
	t.Cleanup(b.Close)
	for i := range 1000 {
		_, err := b.Create(ctx, "k"+strconv.Itoa(i), []byte("v"), 0)
		require.NoError(t, err)
	}
	before := blockedWatchDeliveries()
	h := b.NewHub(">")
	h.KeepView("")
	h.StopWhenIdle()
	h.mu.Lock()
	st := h.beginStartLocked(nil) // as if its only caller's ctx ended at once
	// The hub's lock stays busy until nats.go is blocked on the new
	// watch's full channel.
	natstest.Eventually(t, 10*time.Second, func() bool { return blockedWatchDeliveries() > before },
		"the watch's delivery fills its channel")
	h.mu.Unlock()
	natstest.Eventually(t, 10*time.Second, func() bool {
		select {
		case <-st.done:
			return true
		default:
			return false
		}
	}, "the start ends")
	require.False(t, h.Running(), "nobody waited: not kept")
	require.NoError(t, h.Close())
	natstest.Eventually(t, 10*time.Second, func() bool { return blockedWatchDeliveries() <= before },
		"the dropped watch's delivery is not left blocked")
}

// The old watch ends by itself (nats.go drains an ordered consumer whose
// own new consumer could not be made) while the hub's replacement of it
// is being made (held up here by a stalled connection): the watch's end
// leaves the hub's state to the replacement, and the feeds go on with it
// instead of ending.
func TestWatchEndingDuringItsReplacementLeavesFeedsToIt(t *testing.T) {
	n := natstest.WithServer(t)
	p, js := natstest.ThroughProxy(t, n)
	ctx := natstest.Context(t, 60*time.Second)
	b, err := Open(ctx, js, Config{Bucket: "rvend"})
	require.NoError(t, err)
	t.Cleanup(b.Close)
	r1, err := b.Create(ctx, "a", []byte("1"), 0)
	require.NoError(t, err)
	h := b.NewHub(">")
	h.KeepView("")
	t.Cleanup(func() { _ = h.Close() })
	f, err := h.Feed(ctx, "", nil, 64)
	require.NoError(t, err)
	defer f.Close()
	items := natstest.TakeFeed[FeedItem](t, f, 5*time.Second)
	require.Equal(t, r1, items[0].Revision)

	h.mu.Lock()
	gen, w := h.gen, h.w
	h.mu.Unlock()
	p.Stall(true)
	t.Cleanup(func() { p.Stall(false) })
	h.reconnected(gen) // the connection came back: a replacement is being made
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop() }() // the old watch ends under it (its consumer delete waits)
	natstest.Eventually(t, 10*time.Second, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		rp := h.replacingLocked(gen)
		return rp != nil && rp.orphaned
	}, "the old watch ended and left the hub's state to its replacement")
	p.Stall(false)
	<-stopped // answered or timed out: the subscription ended either way

	other := natstest.JetStream(t, natstest.Connect(t, n.Server))
	kv, err := other.KeyValue(ctx, "rvend")
	require.NoError(t, err)
	r2, err := kv.Create(ctx, "b", []byte("2"))
	require.NoError(t, err)
	natstest.Eventually(t, 20*time.Second, func() bool {
		its, err := f.Take()
		require.NoError(t, err, "the feed ended although a replacement watch was being made")
		for _, it := range its {
			if it.Revision == r2 {
				return true
			}
		}
		return false
	}, "change b reaches the feed through the replacement")
}

// A feed lagging when the hub's watch resumes after a reconnect gets its
// Resumed item at the end of its catch-up (which comes from a view that
// missed the same expiries); a feed that keeps up gets it in line with
// its changes.
func TestResumedReachesLaggingAndKeepingFeeds(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	b, err := Open(ctx, n.JS, Config{Bucket: "resumed"})
	require.NoError(t, err)
	t.Cleanup(b.Close)
	_, err = b.Create(ctx, "a", []byte("1"), 0)
	require.NoError(t, err)
	h := b.NewHub(">")
	h.KeepView("")
	t.Cleanup(func() { _ = h.Close() })
	lagging, err := h.Feed(ctx, "", nil, 1)
	require.NoError(t, err)
	defer lagging.Close()
	keeping, err := h.Feed(ctx, "", nil, 64)
	require.NoError(t, err)
	defer keeping.Close()
	natstest.TakeFeed[FeedItem](t, lagging, 5*time.Second)
	natstest.TakeFeed[FeedItem](t, keeping, 5*time.Second)
	for _, k := range []string{"b", "c"} {
		_, err = b.Create(ctx, k, []byte("1"), 0)
		require.NoError(t, err)
	}
	natstest.Eventually(t, 5*time.Second, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		_, seen := h.view.lookup("c")
		return lagging.lagged && seen
	}, "the small feed lags behind b and c")

	h.mu.Lock()
	gen := h.gen
	h.mu.Unlock()
	h.reconnected(gen)
	natstest.Eventually(t, 10*time.Second, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.gen != gen
	}, "the watch is replaced, resuming")

	items := natstest.TakeFeed[FeedItem](t, lagging, 5*time.Second)
	require.NotEmpty(t, items)
	require.Equal(t, FeedItem{Resumed: true}, items[len(items)-1], "%+v", items)
	require.True(t, items[len(items)-2].Synced, "after the catch-up: %+v", items)
	var resumed int
	for _, it := range natstest.TakeFeed[FeedItem](t, keeping, 5*time.Second) {
		if it.Resumed {
			resumed++
		}
	}
	require.Equal(t, 1, resumed)
}
