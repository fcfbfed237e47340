package kvledger_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// WaitFinal right after a write the caller saw acknowledged never answers
// with the state before it, even while the store's shared watch lags: a
// failed task reopened elsewhere while this process's watch is held back
// is waited for until it ends again (it answered "failed" at once, from
// the watch's view, in a loaded run of the worker's cancel test).
func TestWaitFinalAfterAWriteTheWatchHasNotSeen(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	p, jsA := natstest.ThroughProxy(t, n, jetstream.WithDefaultTimeout(30*time.Second))
	storeA := newKVStore(t, jsA, kvledger.KVStoreConfig{})
	la := newLedger(t, storeA)
	lb := newLedger(t, newKVStore(t, n.NewJS(t), kvledger.KVStoreConfig{Bucket: storeA.Name()}))

	_, err := lb.Admit(ctx, "a", "k", 1, nil, t0)
	require.NoError(t, err)
	fence, err := lb.Claim(ctx, "w", "k", "w", time.Minute, t0)
	require.NoError(t, err)
	require.NoError(t, lb.Complete(ctx, "w", "k", "w", fence, kvledger.StatusFailed, t0))

	// Keep A's shared watch running, and let it see the failure.
	seen := make(chan struct{}, 1)
	w, err := storeA.WatchRecords(ctx, func(c kvledger.Change) {
		if c.Key == "k" && c.Record.Status == kvledger.StatusFailed {
			select {
			case seen <- struct{}{}:
			default:
			}
		}
	})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	natstest.Recv(t, seen, 10*time.Second, "A's watch sees k failed")

	p.Stall(true) // A's watch hears nothing more for now
	t.Cleanup(func() { p.Stall(false) })
	_, err = lb.Reopen(ctx, "op", "k", t0)
	require.NoError(t, err)
	type answer struct {
		final map[kvledger.IdempotencyKey]kvledger.TaskState
		err   error
	}
	got := make(chan answer, 1)
	go func() {
		f, err := la.WaitFinal(ctx, "k")
		got <- answer{f, err}
	}()
	// A stale answer would come at once from the view, before the stall
	// ends; the wait reads the record (through the stalled connection)
	// instead, and so ends only with the completion below.
	p.Stall(false)

	fence, err = lb.Claim(ctx, "w", "k", "w", time.Minute, t0)
	require.NoError(t, err)
	require.NoError(t, lb.Complete(ctx, "w", "k", "w", fence, kvledger.StatusCompleted, t0))
	a := natstest.Recv(t, got, 20*time.Second, "the wait ends with the completion")
	require.NoError(t, a.err)
	require.Equal(t, kvledger.StatusCompleted, a.final["k"].Status)
}
