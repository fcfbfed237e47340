package kvledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// complete claims and completes key, failing the test on an error.
func complete(t *testing.T, l *kvledger.Ledger, key kvledger.IdempotencyKey) {
	t.Helper()
	ctx := natstest.Context(t, 10*time.Second)
	f, err := l.Claim(ctx, "w", key, "w", time.Minute, time.Now())
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, "w", key, "w", f, kvledger.StatusCompleted, time.Now()))
}

func admit(t *testing.T, l *kvledger.Ledger, key kvledger.IdempotencyKey, needs ...kvledger.IdempotencyKey) {
	t.Helper()
	ok, err := l.Admit(natstest.Context(t, 10*time.Second), "a", key, 1, nil, time.Now(), needs...)
	require.NoError(t, err)
	require.True(t, ok)
}

func present(t *testing.T, l *kvledger.Ledger, key kvledger.IdempotencyKey) bool {
	t.Helper()
	_, found, err := l.State(natstest.Context(t, 10*time.Second), key)
	require.NoError(t, err)
	return found
}

// TestRetentionKeepsANeedWhileADependentRuns: under a Retention, a
// completed need is not removed while a task that needs it has not ended
// (a sibling need still runs), also when the dependent is admitted after
// the need completed; once its dependents have ended, its Retention runs
// and it goes. Without the rule the need expired first, and the dependent
// waited for good for a need with no record.
func TestRetentionKeepsANeedWhileADependentRuns(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	l := newLedger(t, newKVStore(t, n.JS, kvledger.KVStoreConfig{Retention: time.Second}))

	admit(t, l, "a")
	admit(t, l, "c")
	admit(t, l, "b", "a", "c")
	complete(t, l, "a") // c, a sibling need of b, has not run yet
	admit(t, l, "late")
	admit(t, l, "e")
	complete(t, l, "late")        // completed, set to expire
	admit(t, l, "d", "late", "e") // admitted after its need completed
	admit(t, l, "x")
	complete(t, l, "x") // needed by nothing: written last, expires last
	natstest.Eventually(t, 20*time.Second, func() bool { return !present(t, l, "x") }, "x expires")
	require.True(t, present(t, l, "a"), "a is kept: b needs it and has not ended")
	require.True(t, present(t, l, "late"), "late is kept: d, admitted after it completed, needs it")

	// b and d become ready and run; then their needs' Retention runs.
	complete(t, l, "c")
	complete(t, l, "e")
	for _, k := range []kvledger.IdempotencyKey{"b", "d"} {
		rec, err := l.ClaimIfReady(ctx, "w", k, "w", time.Minute, time.Now())
		require.NoError(t, err, "%s is ready: its needs are completed", k)
		require.NoError(t, l.Complete(ctx, "w", k, "w", rec.Fence, kvledger.StatusCompleted, time.Now()))
	}
	natstest.Eventually(t, 20*time.Second, func() bool {
		for _, k := range []kvledger.IdempotencyKey{"a", "b", "c", "d", "e", "late"} {
			if present(t, l, k) {
				return false
			}
		}
		return true
	}, "every record expires once nothing that needs it is left")
}

// TestDeleteRefusesANeededRecord: Delete of a record that a pending or
// claimed task needs returns ErrNeeded naming it, and removes nothing; a
// record whose dependents have all ended is removed.
func TestDeleteRefusesANeededRecord(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	l := newLedger(t, newKVStore(t, n.JS, kvledger.KVStoreConfig{}))
	admit(t, l, "a")
	admit(t, l, "b", "a")
	complete(t, l, "a")
	err := l.Delete(ctx, "op", "a", time.Now())
	require.ErrorIs(t, err, kvledger.ErrNeeded)
	require.ErrorContains(t, err, `"b"`)
	require.True(t, present(t, l, "a"))

	complete(t, l, "b")
	require.NoError(t, l.Delete(ctx, "op", "a", time.Now()), "b has ended")
	require.False(t, present(t, l, "a"))
}
