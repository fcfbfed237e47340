package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

// testDeleteRecord checks the optional RecordDeleter capability: a
// delete conditional on the stored version, and fences that keep rising
// when the key is admitted again. Stores without it skip.
func testDeleteRecord(t *testing.T, newStore NewStore) {
	s := newStore(t)
	del, ok := s.(kvledger.RecordDeleter)
	if !ok {
		t.Skip("store has no RecordDeleter")
	}
	ctx := ctxFor(t)
	l, err := kvledger.New(s, nil)
	require.NoError(t, err)
	_, err = l.Admit(ctx, "t", "k", 1, nil, t0)
	require.NoError(t, err)
	f, err := l.Claim(ctx, "t", "k", "w", lease, t0)
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, "t", "k", "w", f, kvledger.StatusCompleted, t0))
	cur, found, err := s.Load(ctx, "k")
	require.NoError(t, err)
	require.True(t, found)

	stale := cur
	stale.Rev++ // no stored version has it
	_, ok, err = del.DeleteRecord(ctx, "k", stale)
	require.NoError(t, err)
	require.False(t, ok, "a delete against another version is refused")

	rev, ok, err := del.DeleteRecord(ctx, "k", cur)
	require.NoError(t, err)
	require.True(t, ok)
	require.Greater(t, rev, cur.Rev)
	_, found, err = s.Load(ctx, "k")
	require.NoError(t, err)
	require.False(t, found)
	_, ok, err = del.DeleteRecord(ctx, "k", cur)
	require.NoError(t, err)
	require.False(t, ok, "deleting twice is refused")

	_, err = l.Admit(ctx, "t", "k", 1, nil, t0)
	require.NoError(t, err)
	f2, err := l.Claim(ctx, "t", "k", "w", lease, t0)
	require.NoError(t, err)
	require.Greater(t, f2, f, "fences rise across deletion")
}
