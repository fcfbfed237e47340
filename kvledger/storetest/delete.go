package storetest

import (
	"testing"

	"github.com/natscoord/natscoord/internal/testkit/suitecheck"
	"github.com/natscoord/natscoord/kvledger"
)

// testDeleteRecord checks the optional RecordDeleter capability: a
// delete conditional on the stored version (an outdated one, as an undone
// Restore may hold, removes nothing and is no error), and fences that
// keep rising when the key is admitted again. Stores without it skip.
func testDeleteRecord(t *testing.T, newStore NewStore) {
	s := newStore(t)
	del, ok := s.(kvledger.RecordDeleter)
	if !ok {
		t.Skip("store has no RecordDeleter")
	}
	ctx := ctxFor(t)
	l, err := kvledger.New(s)
	suitecheck.NoError(t, err)
	_, err = l.Admit(ctx, "t", "k", 1, nil, t0)
	suitecheck.NoError(t, err)
	f, err := l.Claim(ctx, "t", "k", "w", lease, t0)
	suitecheck.NoError(t, err)
	suitecheck.NoError(t, l.Complete(ctx, "t", "k", "w", f, kvledger.StatusCompleted, t0))
	cur, found, err := s.Load(ctx, "k")
	suitecheck.NoError(t, err)
	suitecheck.True(t, found)

	stale := cur
	stale.Rev++ // no stored version has it
	_, ok, err = del.DeleteRecord(ctx, "k", stale)
	suitecheck.NoError(t, err)
	suitecheck.False(t, ok, "a delete against another version is refused")

	suitecheck.NoError(t, insertOnce(t, s, kvledger.TaskState{Key: "v", Status: kvledger.StatusPending, Sequence: 1, CreatedAt: t0, UpdatedAt: t0}))
	v1, _, err := s.Load(ctx, "v")
	suitecheck.NoError(t, err)
	v2 := v1
	v2.Sequence = 2
	ok, err = s.CompareAndSwap(ctx, "v", v1, v2)
	suitecheck.NoError(t, err)
	suitecheck.True(t, ok)
	_, ok, err = del.DeleteRecord(ctx, "v", v1)
	suitecheck.NoError(t, err)
	suitecheck.False(t, ok, "a delete of a version written over is refused")
	_, found, err = s.Load(ctx, "v")
	suitecheck.NoError(t, err)
	suitecheck.True(t, found, "a refused delete removes nothing")
	v2, _, err = s.Load(ctx, "v")
	suitecheck.NoError(t, err)
	_, ok, err = del.DeleteRecord(ctx, "v", v2)
	suitecheck.NoError(t, err)
	suitecheck.True(t, ok, "the version stored is deleted")

	rev, ok, err := del.DeleteRecord(ctx, "k", cur)
	suitecheck.NoError(t, err)
	suitecheck.True(t, ok)
	suitecheck.Greater(t, rev, cur.Rev)
	_, found, err = s.Load(ctx, "k")
	suitecheck.NoError(t, err)
	suitecheck.False(t, found)
	_, ok, err = del.DeleteRecord(ctx, "k", cur)
	suitecheck.NoError(t, err)
	suitecheck.False(t, ok, "deleting twice is refused")

	_, err = l.Admit(ctx, "t", "k", 1, nil, t0)
	suitecheck.NoError(t, err)
	again, found, err := s.Load(ctx, "k")
	suitecheck.NoError(t, err)
	suitecheck.True(t, found)
	suitecheck.Greater(t, again.Rev, rev, "a record admitted again never reuses the deletion's revision (their events would share an id)")
	seen := 0
	suitecheck.NoError(t, s.Range(ctx, func(ts kvledger.TaskState) bool {
		suitecheck.True(t, ts.Key == "k", "Range yields only stored records, got %+v", ts)
		seen++
		return true
	}))
	suitecheck.True(t, seen == 1, "Range yields the record admitted again once, got %d", seen)
	f2, err := l.Claim(ctx, "t", "k", "w", lease, t0)
	suitecheck.NoError(t, err)
	suitecheck.Greater(t, f2, f, "fences rise across deletion")
}
