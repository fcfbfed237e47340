package kvledger_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

type callerKey struct{}

// releaseSeen is what a lease Observer saw of one release's context.
type releaseSeen struct {
	value    any
	deadline time.Time
	ended    error
	err      error
}

// releaseWatch records the context of every lease release.
type releaseWatch struct {
	mu   sync.Mutex
	seen []releaseSeen
}

func (*releaseWatch) OnAcquire(context.Context, kvlease.Event) {}
func (*releaseWatch) OnRenew(context.Context, kvlease.Event)   {}
func (*releaseWatch) OnLost(context.Context, kvlease.Event)    {}
func (w *releaseWatch) OnRelease(ctx context.Context, e kvlease.Event) {
	dl, _ := ctx.Deadline()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, releaseSeen{value: ctx.Value(callerKey{}), deadline: dl, ended: ctx.Err(), err: e.Err})
}

func (w *releaseWatch) take() []releaseSeen {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.seen
	w.seen = nil
	return s
}

// Release and Complete delete the lease of the claim they end after their
// write, also when the caller's ctx ends right after it: the cleanup runs
// under the caller's ctx without its cancellation (its values carried),
// bounded by the lease manager's bound on one operation (its OpTimeout,
// which the ledger takes before the store's: see
// TestClaimLeaseCleanupBoundByLeaseManager), not under a context of its
// own making.
func TestClaimLeaseCleanupOutlivesTheCallersCtx(t *testing.T) {
	n := natstest.WithServer(t)
	base := natstest.Context(t, 60*time.Second)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	const leases = "cleanup_leases"
	watch := &releaseWatch{}
	m := natstest.Open(t, "lease manager", func(ctx context.Context) (*kvlease.Manager, error) {
		return kvlease.NewManager(ctx, n.JS, kvlease.Config{Bucket: leases, Observer: watch})
	})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	l := newLedger(t, store, kvledger.WithLeases(m))
	admitAll(t, base, l, "k")

	end := map[string]func(ctx context.Context, fence kvledger.FenceToken) error{
		"Release": func(ctx context.Context, fence kvledger.FenceToken) error {
			return l.Release(ctx, "w", "k", "w", fence, time.Now())
		},
		"Complete": func(ctx context.Context, fence kvledger.FenceToken) error {
			return l.Complete(ctx, "w", "k", "w", fence, kvledger.StatusCompleted, time.Now())
		},
	}
	for _, name := range []string{"Release", "Complete"} {
		fence, err := l.Claim(base, "w", "k", "w", time.Hour, time.Now())
		require.NoError(t, err, name)
		require.Len(t, liveLeaseKeys(t, n.JS, leases), 1, name)
		ctx, cancel := context.WithCancel(context.WithValue(base, callerKey{}, name))
		kvledger.SetAfterWriteHook(l, func(kvledger.IdempotencyKey, kvledger.TaskState) error {
			cancel() // the caller gives up once the write landed
			return nil
		})
		start := time.Now()
		require.NoError(t, end[name](ctx, fence), name)
		kvledger.SetAfterWriteHook(l, nil)
		require.Empty(t, liveLeaseKeys(t, n.JS, leases), "%s: the claim's lease is deleted", name)
		seen := watch.take()
		require.Len(t, seen, 1, name)
		require.Equal(t, name, seen[0].value, "%s: the cleanup carries the caller's values", name)
		require.NoError(t, seen[0].ended, name)
		require.NoError(t, seen[0].err, name)
		require.False(t, seen[0].deadline.IsZero(), name)
		require.False(t, seen[0].deadline.After(time.Now().Add(m.OpTimeout())), "%s: bounded by the lease manager's op bound", name)
		require.False(t, seen[0].deadline.Before(start.Add(m.OpTimeout())), "%s: bounded by the lease manager's op bound", name)
	}
}

// The cleanup of a claim's lease is bounded by the lease manager's bound
// on one operation (kvlease.Config.OpTimeout), not by the ledger store's:
// it is the lease bucket's operation that the bound is for.
func TestClaimLeaseCleanupBoundByLeaseManager(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	const leases = "cleanup_bound_leases"
	const leaseOp = 2 * time.Second
	require.Greater(t, store.OpTimeout(), leaseOp, "the store's bound is the longer one")
	watch := &releaseWatch{}
	m := natstest.Open(t, "lease manager", func(ctx context.Context) (*kvlease.Manager, error) {
		return kvlease.NewManager(ctx, n.JS, kvlease.Config{Bucket: leases, Observer: watch, OpTimeout: leaseOp})
	})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	require.Equal(t, leaseOp, m.OpTimeout())
	l := newLedger(t, store, kvledger.WithLeases(m))
	admitAll(t, ctx, l, "k")
	fence, err := l.Claim(ctx, "w", "k", "w", time.Hour, time.Now())
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, l.Release(ctx, "w", "k", "w", fence, time.Now()))
	require.Empty(t, liveLeaseKeys(t, n.JS, leases))
	seen := watch.take()
	require.Len(t, seen, 1)
	require.NoError(t, seen[0].err)
	require.False(t, seen[0].deadline.IsZero())
	require.False(t, seen[0].deadline.After(time.Now().Add(leaseOp)), "bounded by the lease manager's op bound")
	require.False(t, seen[0].deadline.Before(start.Add(leaseOp)), "bounded by the lease manager's op bound")
}
