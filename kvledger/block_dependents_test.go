package kvledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

// A failure whose walk never ran (its writer's answer was lost, or it died
// right after the write) leaves its dependents pending; BlockDependents
// finishes the walk from the failed record or from a blocked one.
func TestBlockDependentsFinishesAnInterruptedWalk(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	store := kvledger.NewMemStore()
	l, err := kvledger.New(store)
	require.NoError(t, err)
	for _, k := range []struct {
		key   kvledger.IdempotencyKey
		needs []kvledger.IdempotencyKey
	}{{"a", nil}, {"b", []kvledger.IdempotencyKey{"a"}}, {"c", []kvledger.IdempotencyKey{"b"}}, {"free", nil}} {
		ok, err := l.Admit(ctx, "t", k.key, 1, nil, now, k.needs...)
		require.NoError(t, err)
		require.True(t, ok)
	}
	// "a" fails by a write that ran no walk.
	cur, _, err := store.Load(ctx, "a")
	require.NoError(t, err)
	failed := cur
	failed.Status, failed.UpdatedAt, failed.LastEvent = kvledger.StatusFailed, now, kvledger.CompletedEvent
	ok, err := store.CompareAndSwap(ctx, "a", cur, failed)
	require.NoError(t, err)
	require.True(t, ok)
	for _, k := range []kvledger.IdempotencyKey{"b", "c"} {
		st, _, err := l.State(ctx, k)
		require.NoError(t, err)
		require.Equal(t, kvledger.StatusPending, st.Status, "before: %s", k)
	}

	require.NoError(t, l.BlockDependents(ctx, "repair", "a", now))
	for _, k := range []kvledger.IdempotencyKey{"b", "c"} {
		st, _, err := l.State(ctx, k)
		require.NoError(t, err)
		require.Equal(t, kvledger.StatusBlocked, st.Status, k)
		require.Equal(t, kvledger.IdempotencyKey("a"), st.BlockedBy, k)
	}
	st, _, err := l.State(ctx, "free")
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusPending, st.Status, "an unrelated task is untouched")
	require.NoError(t, l.BlockDependents(ctx, "repair", "a", now), "idempotent")
	require.NoError(t, l.BlockDependents(ctx, "repair", "free", now), "a pending record: nothing to do")
	require.NoError(t, l.BlockDependents(ctx, "repair", "missing", now))
}
