package kvx_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// viewSuite checks that a hub keeping a view (KeepView), after SyncTo the
// revision of a write, answers with every write acknowledged up to it:
// also on R3, where the hub's consumer may run on a replica that has not
// applied the newest writes yet.
func viewSuite(t *testing.T, b *kvx.Bucket) {
	ctx := natstest.Context(t, 30*time.Second)
	// Written before the hub exists: the view starts from initial values.
	r0, err := b.Create(ctx, "v.q.a.old", []byte("o"), 0)
	require.NoError(t, err)
	deleteAt(ctx, t, b, "v.q.a.old", r0)
	last, err := b.Create(ctx, "v.q.a.kept", []byte("k"), 0)
	require.NoError(t, err)

	h := b.NewHub("v.q.>")
	h.KeepView("v.q")
	t.Cleanup(func() { _ = h.Close() })
	children := func(parent string) []string {
		var out []string
		require.NoError(t, h.Children(parent, func(e kvx.Entry) bool {
			out = append(out, e.Key+"="+string(e.Value))
			return true
		}))
		slices.Sort(out)
		return out
	}
	require.NoError(t, h.SyncTo(ctx, last))
	require.Equal(t, []string{"v.q.a.kept=k"}, children("v.q.a"))
	require.Empty(t, children("v.q.none"))

	want := []string{"v.q.a.kept=k"}
	revs := map[string]uint64{}
	for i := range 20 {
		k := fmt.Sprintf("v.q.a.k%02d", i)
		r, err := b.Create(ctx, k, []byte("v"), 0)
		require.NoError(t, err)
		revs[k] = r
		want = append(want, k+"=v")
		if i%4 == 3 { // delete an earlier key
			d := fmt.Sprintf("v.q.a.k%02d", i-2)
			deleteAt(ctx, t, b, d, revs[d])
			want = slices.DeleteFunc(want, func(s string) bool { return s == d+"=v" })
		}
		// Another parent's writes do not show under this one.
		last, err = b.Create(ctx, fmt.Sprintf("v.q.b.k%02d", i), []byte("b"), 0)
		require.NoError(t, err)
		require.NoError(t, h.SyncTo(ctx, last))
		slices.Sort(want)
		require.Equal(t, want, children("v.q.a"), "after write %d", i)
		live, err := h.Live(k)
		require.NoError(t, err)
		require.True(t, live, "after write %d", i)
	}
	live, err := h.Live("v.q.a.k01")
	require.NoError(t, err)
	require.False(t, live, "deleted")
	n := 0
	require.NoError(t, h.Children("v.q.a", func(kvx.Entry) bool { n++; return false }))
	require.Equal(t, 1, n)

	// Subscribers of a view hub are woken as on a plain hub.
	s, err := h.Subscribe(ctx, "v.q.a.kept")
	require.NoError(t, err)
	defer s.Close()
	e, err := b.Get(ctx, "v.q.a.kept")
	require.NoError(t, err)
	deleteAt(ctx, t, b, "v.q.a.kept", e.Revision)
	got := natstest.Recv(t, s.C(), 5*time.Second, "delete of a subscribed key")
	require.False(t, got.Live())

	require.NoError(t, h.Close())
	require.ErrorIs(t, h.SyncTo(ctx, last), kvx.ErrHubClosed)
}

func TestViewHub(t *testing.T) {
	viewSuite(t, openBucket(t, natstest.WithServer(t).JS, 1))
}

func TestViewHubR3(t *testing.T) {
	viewSuite(t, openBucket(t, natstest.WithCluster(t, 3).JS, 3))
}

// A hub without KeepView keeps no view and says so.
func TestPlainHubHasNoView(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 10*time.Second)
	b := openBucket(t, n.JS, 1)
	plain := b.NewHub(">")
	t.Cleanup(func() { _ = plain.Close() })
	require.Error(t, plain.SyncTo(ctx, 1))
	require.Error(t, plain.Children("x", func(kvx.Entry) bool { return true }))
	_, err := plain.Live("x.y")
	require.Error(t, err)
}

// deleteAt deletes key at rev, writing again while the refusal is
// spurious (the key still at rev: kvx.SpuriousConflict says why a loaded
// R3 stream refuses a write sent right after the key's last one).
func deleteAt(ctx context.Context, t *testing.T, b *kvx.Bucket, key string, rev uint64) {
	t.Helper()
	for range 10 {
		_, err := b.Delete(ctx, key, rev)
		if !kvx.IsConflict(err) {
			require.NoError(t, err)
			return
		}
		cur, err := b.Get(ctx, key)
		require.NoError(t, err)
		require.Equal(t, rev, cur.Revision, "a real conflict: %q moved on", key)
	}
	require.FailNow(t, "delete refused ten times", "%q at %d", key, rev)
}
