package kvx_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }

func openBucket(t *testing.T, js jetstream.JetStream, replicas int) *kvx.Bucket {
	t.Helper()
	return natstest.Open(t, "open bucket", func(ctx context.Context) (*kvx.Bucket, error) {
		return kvx.Open(ctx, js, kvx.Config{Bucket: "t", Replicas: replicas, LimitMarkerTTL: time.Second, RequireTTL: true})
	})
}

// proxiedBucket opens a bucket of a new server through a proxy, its
// JetStream handle's timeout (the op timeout) opTimeout, with a ctx of
// 30 s for the test.
func proxiedBucket(t *testing.T, opTimeout time.Duration) (*natstest.Node, *natstest.DelayProxy, *kvx.Bucket, context.Context) {
	t.Helper()
	n := natstest.WithServer(t)
	p, js := natstest.ThroughProxy(t, n, jetstream.WithDefaultTimeout(opTimeout))
	return n, p, openBucket(t, js, 1), natstest.Context(t, 30*time.Second)
}

// casSuite runs the CAS paths; it is shared by the single-node and the
// 3-node (R3) runs because replicated streams report conflicts with a
// different error code.
func casSuite(t *testing.T, b *kvx.Bucket) {
	ctx := natstest.Context(t, 30*time.Second)

	t.Run("create conflict", func(t *testing.T) {
		r1, err := b.Create(ctx, "a", []byte("1"), 0)
		require.NoError(t, err)
		_, err = b.Create(ctx, "a", []byte("2"), 0)
		require.ErrorIs(t, err, kvx.ErrConflict)
		_, err = b.Update(ctx, "a", []byte("2"), r1+100, 0)
		require.ErrorIs(t, err, kvx.ErrConflict)
		r2, err := b.Update(ctx, "a", []byte("2"), r1, 0)
		require.NoError(t, err)
		require.Greater(t, r2, r1)
		e, err := b.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, "2", string(e.Value))
		require.Equal(t, r2, e.Revision)
	})

	t.Run("delete marker and acquire", func(t *testing.T) {
		r1, _, err := b.Acquire(ctx, "b", []byte("x"), 0, 0)
		require.NoError(t, err)
		_, cur, err := b.Acquire(ctx, "b", []byte("y"), 0, 0)
		require.ErrorIs(t, err, kvx.ErrConflict)
		require.Equal(t, r1, cur.Revision)
		require.Equal(t, "x", string(cur.Value))

		_, err = b.Delete(ctx, "b", r1+1)
		require.ErrorIs(t, err, kvx.ErrConflict, "a stale delete must not remove the value")
		m, err := b.Delete(ctx, "b", r1)
		require.NoError(t, err)
		require.Greater(t, m, r1)

		e, err := b.Get(ctx, "b")
		require.ErrorIs(t, err, kvx.ErrNotFound)
		require.Equal(t, kvx.OpDelete, e.Op)
		require.Equal(t, m, e.Revision)

		// With the marker's revision as hint: one publish.
		r2, _, err := b.Acquire(ctx, "b", []byte("z"), 0, m)
		require.NoError(t, err)
		require.Greater(t, r2, m)

		// Without a hint it still succeeds (after reading the marker).
		m2, err := b.Delete(ctx, "b", r2)
		require.NoError(t, err)
		r3, _, err := b.Acquire(ctx, "b", []byte("w"), 0, 0)
		require.NoError(t, err)
		require.Greater(t, r3, m2)
	})

	t.Run("guarded put", func(t *testing.T) {
		g, err := b.Create(ctx, "guard", []byte("owner"), 0)
		require.NoError(t, err)
		_, err = b.PutGuarded(ctx, "data", []byte("1"), "guard", g)
		require.NoError(t, err)
		g2, err := b.Update(ctx, "guard", []byte("other"), g, 0)
		require.NoError(t, err)
		_, err = b.PutGuarded(ctx, "data", []byte("2"), "guard", g)
		require.ErrorIs(t, err, kvx.ErrConflict)
		e, err := b.Get(ctx, "data")
		require.NoError(t, err)
		require.Equal(t, "1", string(e.Value), "a refused guarded write writes nothing")
		_, err = b.PutGuarded(ctx, "data", []byte("3"), "guard", g2)
		require.NoError(t, err)
	})

	t.Run("ttl renewal and expiry", func(t *testing.T) {
		r, err := b.Create(ctx, "ttl", []byte("v"), time.Second)
		require.NoError(t, err)
		r2, err := b.Update(ctx, "ttl", []byte("v"), r, 2*time.Second)
		require.NoError(t, err)
		// The renewed value carries its own TTL: it expires by itself.
		natstest.Eventually(t, 5*time.Second, func() bool {
			_, err := b.Get(ctx, "ttl")
			return errors.Is(err, kvx.ErrNotFound)
		}, "renewed key expires by the server TTL")
		e, err := b.Last(ctx, "ttl")
		require.NoError(t, err)
		require.Equal(t, kvx.OpExpired, e.Op)
		require.Greater(t, e.Revision, r2)
		// And can be acquired again.
		_, _, err = b.Acquire(ctx, "ttl", []byte("n"), time.Second, 0)
		require.NoError(t, err)
	})

	t.Run("errors that are not conflicts", func(t *testing.T) {
		_, err := b.Create(ctx, "bad key", nil, 0)
		require.ErrorIs(t, err, kvx.ErrInvalidKey)
		require.False(t, kvx.IsConflict(err))
		_, err = b.Create(ctx, "short", nil, 500*time.Millisecond)
		require.Error(t, err)
		require.False(t, kvx.IsConflict(err))
		_, err = b.Last(ctx, "never")
		require.ErrorIs(t, err, kvx.ErrNotFound)
	})
}

func TestCASSingleNode(t *testing.T) {
	n := natstest.WithServer(t)
	casSuite(t, openBucket(t, n.JS, 1))
}

func TestCASCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := natstest.WithCluster(t, 3)
	casSuite(t, openBucket(t, c.JS, 3))
}

func TestOpenRequireTTL(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 10*time.Second)
	_, err := n.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "plain"})
	require.NoError(t, err)
	_, err = kvx.Open(ctx, n.JS, kvx.Config{Bucket: "plain", RequireTTL: true})
	require.ErrorIs(t, err, kvx.ErrNoTTL)
	b, err := kvx.Open(ctx, n.JS, kvx.Config{Bucket: "plain"})
	require.NoError(t, err)
	_, err = b.Create(ctx, "k", nil, time.Second)
	require.ErrorIs(t, err, kvx.ErrNoTTL)
}

func TestHubWakesWaiters(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 20*time.Second)
	h := b.NewHub(">")
	t.Cleanup(func() { require.NoError(t, h.Close()) })

	r, err := b.Create(ctx, "k1", []byte("v"), time.Second)
	require.NoError(t, err)
	s1, err := h.Subscribe(ctx, "k1")
	require.NoError(t, err)
	s2, err := h.Subscribe(ctx, "k1", "k2")
	require.NoError(t, err)
	s3, err := h.Subscribe(ctx, "other")
	require.NoError(t, err)

	m, err := b.Delete(ctx, "k1", r)
	require.NoError(t, err)
	for _, s := range []*kvx.Sub{s1, s2} {
		e := natstest.Recv(t, s.C(), 5*time.Second, "delete event")
		require.Equal(t, kvx.OpDelete, e.Op)
		require.Equal(t, m, e.Revision)
	}
	select {
	case e := <-s3.C():
		t.Fatalf("unrelated subscriber woken: %+v", e)
	default:
	}
	s1.Close()
	s1.Close()

	// Expiry by TTL reaches waiters too (as a purge-like marker).
	_, err = b.Create(ctx, "k2", []byte("v"), time.Second)
	require.NoError(t, err)
	e := natstest.Recv(t, s2.C(), 5*time.Second, "put event")
	require.Equal(t, kvx.OpPut, e.Op)
	e = natstest.Recv(t, s2.C(), 5*time.Second, "expiry event")
	require.False(t, e.Live())

	require.NoError(t, h.Close())
	_, ok := <-s2.C()
	require.False(t, ok, "hub close releases waiters")
	s2.Close()
	s3.Close()
	_, err = h.Subscribe(ctx, "k1")
	require.ErrorIs(t, err, kvx.ErrHubClosed)
}

func TestScan(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 20*time.Second)
	for i := range 50 {
		_, err := b.Create(ctx, fmt.Sprintf("s.%d", i), []byte("v"), 0)
		require.NoError(t, err)
	}
	r, err := b.Create(ctx, "s.gone", nil, 0)
	require.NoError(t, err)
	_, err = b.Delete(ctx, "s.gone", r)
	require.NoError(t, err)
	count := 0
	require.NoError(t, b.Scan(ctx, "s.*", func(e kvx.Entry) bool { count++; return true }))
	require.Equal(t, 50, count)
	count = 0
	require.NoError(t, b.Scan(ctx, "s.*", func(e kvx.Entry) bool { count++; return count < 10 }))
	require.Equal(t, 10, count)
	// An empty match returns at once.
	require.NoError(t, b.Scan(ctx, "none.*", func(kvx.Entry) bool { t.Fatal("no entries"); return false }))
}

func TestOutcomeUnknown(t *testing.T) {
	require.False(t, kvx.OutcomeUnknown(nil))
	require.False(t, kvx.OutcomeUnknown(fmt.Errorf("x: %w", kvx.ErrConflict)))
	require.True(t, kvx.OutcomeUnknown(context.DeadlineExceeded))
	require.False(t, kvx.OutcomeUnknown(&jetstream.APIError{Code: 400, ErrorCode: 10071}), "a refusal")
	require.True(t, kvx.OutcomeUnknown(&jetstream.APIError{Code: 409, ErrorCode: 10158}), "same id still in process")
}

func FuzzValidKey(f *testing.F) {
	for _, s := range []string{"a", "a.b", ".a", "a.", "a..b", "a b", "a/b=c-d_e", "", "*", ">"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if kvx.ValidKey(s) {
			require.NoError(t, kvx.CheckKey(s))
		} else {
			require.ErrorIs(t, kvx.CheckKey(s), kvx.ErrInvalidKey)
		}
	})
}

func TestDeleteTTLMarkerLeavesTheBucket(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 20*time.Second)
	r, err := b.Create(ctx, "gone", []byte("v"), 0)
	require.NoError(t, err)
	m, err := b.DeleteTTL(ctx, "gone", r, time.Second)
	require.NoError(t, err)
	e, err := b.Last(ctx, "gone")
	require.NoError(t, err)
	require.Equal(t, kvx.OpDelete, e.Op)
	require.Equal(t, m, e.Revision)
	// The marker expires (replaced by an expiry marker), which in turn
	// expires after LimitMarkerTTL: the key has no message left.
	natstest.Eventually(t, 10*time.Second, func() bool {
		_, err := b.Last(ctx, "gone")
		return errors.Is(err, kvx.ErrNotFound)
	}, "the deleted key leaves the bucket")
	_, _, err = b.Acquire(ctx, "gone", []byte("again"), 0, m)
	require.NoError(t, err, "a stale hint still acquires")
}

// viewFeed is a hub of b keeping the view of prefix, closed when the test
// ends, and a feed of that prefix holding up to limit changes.
func viewFeed(t *testing.T, ctx context.Context, b *kvx.Bucket, prefix string, limit int) (*kvx.Hub, *kvx.Feed) {
	t.Helper()
	h := b.NewHub(">")
	h.KeepView(prefix)
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	f, err := h.Feed(ctx, prefix, nil, limit)
	require.NoError(t, err)
	t.Cleanup(f.Close)
	return h, f
}
