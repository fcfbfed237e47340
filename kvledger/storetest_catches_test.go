package kvledger_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/storetest"
)

// plainStore hides the MemStore's Swapper: its Revs come from one counter
// per store, so they grow by more than 1 per write of a key, which only a
// Swapper may do.
type plainStore struct{ kvledger.Store }

// storetest must fail a store that breaks the Rev rule. The suite runs in
// a child process (this test binary again), because a failing subtest
// would fail this test too.
func TestStoretestCatchesBrokenRevisions(t *testing.T) {
	if os.Getenv("NATSCOORD_BROKEN_STORE") == "1" {
		storetest.Run(t, func(t *testing.T) kvledger.Store { return plainStore{kvledger.NewMemStore()} })
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStoretestCatchesBrokenRevisions$/^Revisions$", "-test.count=1")
	cmd.Env = append(os.Environ(), "NATSCOORD_BROKEN_STORE=1")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "storetest passed a store that breaks the Rev rule:\n%s", out)
	require.Contains(t, string(out), "--- FAIL: TestStoretestCatchesBrokenRevisions/Revisions")
	require.Contains(t, string(out), "a store without Swapper must")
}

// Eviction and re-admission never reuse a revision, so the events of the
// key's second life are told from its first.
func TestMemStoreRevisionsMonotonicAcrossEviction(t *testing.T) {
	ctx := t.Context()
	s, err := kvledger.NewMemStoreWithOptions(kvledger.MemStoreOptions{MaxEntries: 1})
	require.NoError(t, err)
	l := newLedger(t, s)
	admitOK := func(key kvledger.IdempotencyKey) kvledger.TaskState {
		t.Helper()
		ok, err := l.Admit(ctx, "a", key, 1, nil, t0)
		require.NoError(t, err)
		require.True(t, ok)
		st, found, err := l.State(ctx, key)
		require.NoError(t, err)
		require.True(t, found)
		return st
	}
	first := admitOK("k")
	admitOK("other") // evicts k
	_, found, err := l.State(ctx, "k")
	require.NoError(t, err)
	require.False(t, found, "k was evicted")
	again := admitOK("k")
	require.Greater(t, again.Rev, first.Rev, "a revision is never reused in one store")
	require.Len(t, keyEvents(t, l, "k"), 2, "both admissions of k are in the store's log")
}
