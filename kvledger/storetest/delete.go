package storetest

import (
	"testing"

	"github.com/natscoord/natscoord/internal/check"
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
	check.NoError(t, err)
	_, err = l.Admit(ctx, "t", "k", 1, nil, t0)
	check.NoError(t, err)
	f, err := l.Claim(ctx, "t", "k", "w", lease, t0)
	check.NoError(t, err)
	check.NoError(t, l.Complete(ctx, "t", "k", "w", f, kvledger.StatusCompleted, t0))
	cur, found, err := s.Load(ctx, "k")
	check.NoError(t, err)
	check.True(t, found)

	stale := cur
	stale.Rev++ // no stored version has it
	_, ok, err = del.DeleteRecord(ctx, "k", stale)
	check.NoError(t, err)
	check.False(t, ok, "a delete against another version is refused")

	rev, ok, err := del.DeleteRecord(ctx, "k", cur)
	check.NoError(t, err)
	check.True(t, ok)
	check.Greater(t, rev, cur.Rev)
	_, found, err = s.Load(ctx, "k")
	check.NoError(t, err)
	check.False(t, found)
	_, ok, err = del.DeleteRecord(ctx, "k", cur)
	check.NoError(t, err)
	check.False(t, ok, "deleting twice is refused")

	_, err = l.Admit(ctx, "t", "k", 1, nil, t0)
	check.NoError(t, err)
	again, found, err := s.Load(ctx, "k")
	check.NoError(t, err)
	check.True(t, found)
	check.Greater(t, again.Rev, rev, "a record admitted again never reuses the deletion's revision (their events would share an id)")
	seen := 0
	check.NoError(t, s.Range(ctx, func(ts kvledger.TaskState) bool {
		check.True(t, ts.Key == "k", "Range yields only stored records, got %+v", ts)
		seen++
		return true
	}))
	check.True(t, seen == 1, "Range yields the record admitted again once, got %d", seen)
	f2, err := l.Claim(ctx, "t", "k", "w", lease, t0)
	check.NoError(t, err)
	check.Greater(t, f2, f, "fences rise across deletion")
}
