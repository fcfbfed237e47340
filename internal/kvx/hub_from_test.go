package kvx_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// From promises nothing before the watch has delivered a change, and
// afterwards is the newest delivered revision: every later change reaches
// a new subscription.
func TestHubSubFrom(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 20*time.Second)
	h := b.NewHub(">")
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	require.False(t, h.Running())

	s1, err := h.Subscribe(ctx, "a")
	require.NoError(t, err)
	defer s1.Close()
	require.True(t, h.Running())
	require.Equal(t, uint64(math.MaxUint64), s1.From(), "nothing delivered yet")

	r1, err := b.Create(ctx, "a", []byte("1"), 0)
	require.NoError(t, err)
	require.Equal(t, r1, natstest.Recv(t, s1.C(), 5*time.Second, "put a").Revision)

	// A change of another key moves From too: it is a stream position.
	s2, err := h.Subscribe(ctx, "b")
	require.NoError(t, err)
	defer s2.Close()
	rb, err := b.Create(ctx, "b", []byte("1"), 0)
	require.NoError(t, err)
	require.Equal(t, rb, natstest.Recv(t, s2.C(), 5*time.Second, "put b").Revision)
	s3, err := h.Subscribe(ctx, "a")
	require.NoError(t, err)
	defer s3.Close()
	require.Equal(t, rb, s3.From())

	r2, err := b.Update(ctx, "a", []byte("2"), r1, 0)
	require.NoError(t, err)
	e := natstest.Recv(t, s3.C(), 5*time.Second, "update a")
	require.Equal(t, r2, e.Revision)
	require.Greater(t, e.Revision, s3.From())
	require.False(t, s3.Missed())
}

// An unread change of one key replaced by a change of another key of the
// same subscription is reported by Missed, once; a newer change of the
// same key replacing an unread one is not.
func TestHubSubMissed(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 20*time.Second)
	h := b.NewHub(">")
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	one, err := h.Subscribe(ctx, "x")
	require.NoError(t, err)
	defer one.Close()
	both, err := h.Subscribe(ctx, "x", "y")
	require.NoError(t, err)
	defer both.Close()
	probe, err := h.Subscribe(ctx, "probe")
	require.NoError(t, err)
	defer probe.Close()

	// Nobody reads one or both while three changes land; the probe's own
	// change comes after them, so once it is seen the hub has offered all.
	rx, err := b.Create(ctx, "x", []byte("1"), 0)
	require.NoError(t, err)
	rx2, err := b.Update(ctx, "x", []byte("2"), rx, 0)
	require.NoError(t, err)
	ry, err := b.Create(ctx, "y", []byte("1"), 0)
	require.NoError(t, err)
	_, err = b.Create(ctx, "probe", []byte("1"), 0)
	require.NoError(t, err)
	natstest.Recv(t, probe.C(), 5*time.Second, "probe")

	e := natstest.Recv(t, one.C(), time.Second, "x")
	require.Equal(t, rx2, e.Revision, "the newest change of x")
	require.False(t, one.Missed(), "same key: superseded, not missed")

	e = natstest.Recv(t, both.C(), time.Second, "y")
	require.Equal(t, ry, e.Revision)
	require.True(t, both.Missed(), "x's change was dropped for y's")
	require.False(t, both.Missed(), "reported once")
}

// Known reports the latest change of a key the hub had delivered when the
// subscription was made: nothing for keys untouched since the watch
// started, a live value, or a marker.
func TestHubSubKnown(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 20*time.Second)
	old, err := b.Create(ctx, "old", []byte("1"), 0)
	require.NoError(t, err)
	h := b.NewHub(">")
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	watch, err := h.Subscribe(ctx, "k")
	require.NoError(t, err)
	defer watch.Close()

	r, err := b.Create(ctx, "k", []byte("1"), 0)
	require.NoError(t, err)
	natstest.Recv(t, watch.C(), 5*time.Second, "put k")
	s, err := h.Subscribe(ctx, "k", "old")
	require.NoError(t, err)
	seen, ok := s.Known("k")
	require.True(t, ok)
	require.Equal(t, r, seen.Revision)
	require.True(t, seen.Live)
	_, ok = s.Known("old")
	require.False(t, ok, "changed only before the watch started (rev %d)", old)
	_, ok = s.Known("not-subscribed")
	require.False(t, ok)
	s.Close()

	m, err := b.Delete(ctx, "k", r)
	require.NoError(t, err)
	natstest.Recv(t, watch.C(), 5*time.Second, "delete k")
	s, err = h.Subscribe(ctx, "k")
	require.NoError(t, err)
	defer s.Close()
	seen, ok = s.Known("k")
	require.True(t, ok)
	require.Equal(t, kvx.Seen{Revision: m, Live: false}, seen)
}
