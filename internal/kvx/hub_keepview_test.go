package kvx_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// A plain hub whose watch already runs updates-only gains a view of one
// prefix through KeepView: the first SyncTo restarts the watch with the
// current values (its subscribers are told by a closed channel), the view
// holds only the prefix's keys, and the bucket keeps one consumer.
func TestKeepViewUpgradesARunningHub(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	b := openBucket(t, n.JS, 1)
	_, err := b.Create(ctx, "mine.q.a.1", []byte("one"), 0)
	require.NoError(t, err)
	other, err := b.Create(ctx, "other.q.a.1", []byte("x"), 0)
	require.NoError(t, err)

	h := b.NewHub(">")
	t.Cleanup(func() { _ = h.Close() })
	s, err := h.Subscribe(ctx, "other.q.a.1")
	require.NoError(t, err)
	defer s.Close()
	require.True(t, h.Running())
	require.Equal(t, 1, natstest.BucketConsumers(t, n.JS, b.Name()))

	h.KeepView("mine")
	h.KeepView("mine") // idempotent
	require.False(t, h.Ready(), "the running watch carries no view yet")
	require.NoError(t, h.SyncTo(ctx, other))
	require.True(t, h.Ready())
	_, open := <-s.C()
	require.False(t, open, "the updates-only watch ended for the restart")
	require.Equal(t, 1, natstest.BucketConsumers(t, n.JS, b.Name()), "the restarted watch replaces the old one")

	keys := func(parent string) []string {
		var out []string
		require.NoError(t, h.Children(parent, func(e kvx.Entry) bool {
			out = append(out, e.Key)
			return true
		}))
		slices.Sort(out)
		return out
	}
	require.Equal(t, []string{"mine.q.a.1"}, keys("mine.q.a"), "written before the view: from initial values")
	require.Empty(t, keys("other.q.a"), "outside the prefix: not kept")

	// Later writes reach the view and subscribers of any key alike.
	s2, err := h.Subscribe(ctx, "other.q.a.1")
	require.NoError(t, err)
	defer s2.Close()
	r, err := b.Create(ctx, "mine.q.a.2", []byte("two"), 0)
	require.NoError(t, err)
	_, err = b.Delete(ctx, "other.q.a.1", other)
	require.NoError(t, err)
	require.NoError(t, h.SyncTo(ctx, r))
	require.Equal(t, []string{"mine.q.a.1", "mine.q.a.2"}, keys("mine.q.a"))
	got := natstest.Recv(t, s2.C(), 5*time.Second, "delete outside the view")
	require.False(t, got.Live())

	// A second prefix needs the keys' current values too: one more restart.
	h.KeepView("other")
	require.False(t, h.Ready())
	require.NoError(t, h.SyncTo(ctx, r))
	e, ok := h.Lookup("mine.q.a.2")
	require.True(t, ok)
	require.Equal(t, "two", string(e.Value))
	require.Equal(t, 1, natstest.BucketConsumers(t, n.JS, b.Name()))
}
