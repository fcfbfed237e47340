package dashtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// Source is the ledger source the task helpers act as.
const Source = "test"

// Admit admits key with needs, failing the test on error or when the key
// was already admitted.
func Admit(t testing.TB, l *kvledger.Ledger, key string, task any, needs ...string) {
	t.Helper()
	ns := make([]kvledger.IdempotencyKey, len(needs))
	for i, n := range needs {
		ns[i] = kvledger.IdempotencyKey(n)
	}
	ok, err := l.Admit(natstest.Context(t, 5*time.Second), Source, kvledger.IdempotencyKey(key), 1, task, time.Now(), ns...)
	require.NoError(t, err)
	require.True(t, ok)
}

// StoreRecord writes a pending record for key through the Store, past
// the Ledger's admission rules: how a record from before a rule (a key
// with control characters, refused at admission since) still reaches
// the pages.
func StoreRecord(t testing.TB, l *kvledger.Ledger, key string) {
	t.Helper()
	k := kvledger.IdempotencyKey(key)
	now := time.Now()
	ok, err := l.Store().CompareAndSwap(natstest.Context(t, 5*time.Second), k, kvledger.TaskState{}, kvledger.TaskState{
		Key: k, Status: kvledger.StatusPending, Sequence: 1, CreatedBy: Source, CreatedAt: now, UpdatedBy: Source, UpdatedAt: now,
	})
	require.NoError(t, err)
	require.True(t, ok)
}

// RunTask claims key for owner and completes it with status.
func RunTask(t testing.TB, l *kvledger.Ledger, key, owner string, status kvledger.Status) {
	t.Helper()
	ctx := natstest.Context(t, 5*time.Second)
	k := kvledger.IdempotencyKey(key)
	f, err := l.Claim(ctx, Source, k, kvledger.OwnerID(owner), time.Minute, time.Now())
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, Source, k, kvledger.OwnerID(owner), f, status, time.Now()))
}

// BuildGraph admits a small pipeline: fetch → compile → test → package,
// with lint beside compile; package needs test and lint.
func BuildGraph(t testing.TB, l *kvledger.Ledger) {
	t.Helper()
	Admit(t, l, "fetch", map[string]any{"kind": "io"})
	Admit(t, l, "compile", map[string]any{"kind": "build"}, "fetch")
	Admit(t, l, "lint", map[string]any{"kind": "check"}, "fetch")
	Admit(t, l, "test", map[string]any{"kind": "check"}, "compile")
	Admit(t, l, "package", map[string]any{"kind": "build"}, "test", "lint")
}
