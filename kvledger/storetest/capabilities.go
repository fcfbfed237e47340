package storetest

import (
	"testing"

	"github.com/natscoord/natscoord/internal/testkit/suitecheck"
	"github.com/natscoord/natscoord/kvledger"
)

// testCapabilities checks the optional capabilities a store declares:
// Inserter (insert once, report the record it found as Load shows it),
// UniqueRevisions (no two versions share a Rev, across keys here, since
// the suite cannot delete) and RecordChecker (a valid record passes).
// RecordDeleter has a test of its own (testDeleteRecord).
func testCapabilities(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	s := newStore(t)
	rec := func(key kvledger.IdempotencyKey, seq kvledger.Sequence) kvledger.TaskState {
		return kvledger.TaskState{Key: key, Status: kvledger.StatusPending, Sequence: seq, CreatedAt: t0, UpdatedAt: t0}
	}
	if ins, ok := s.(kvledger.Inserter); ok {
		stored, ok, _, found, err := ins.Insert(ctx, "ins", rec("ins", 1))
		suitecheck.NoError(t, err)
		suitecheck.True(t, ok, "Insert of a new key")
		suitecheck.False(t, found)
		loaded, _, err := s.Load(ctx, "ins")
		suitecheck.NoError(t, err)
		suitecheck.Equal(t, loaded.Rev, stored.Rev, "Insert reports the stored Rev")
		suitecheck.Equal(t, loaded.Fence, stored.Fence)
		_, ok, cur, found, err := ins.Insert(ctx, "ins", rec("ins", 2))
		suitecheck.NoError(t, err)
		suitecheck.False(t, ok, "Insert never replaces a record")
		if found {
			suitecheck.Equal(t, loaded.Rev, cur.Rev, "the record Insert found is the stored one")
			suitecheck.Equal(t, loaded.Sequence, cur.Sequence)
		}
		again, _, err := s.Load(ctx, "ins")
		suitecheck.NoError(t, err)
		suitecheck.Equal(t, kvledger.Sequence(1), again.Sequence)
	}
	if _, ok := s.(kvledger.UniqueRevisions); ok {
		seen := map[uint64]kvledger.IdempotencyKey{}
		for _, k := range []kvledger.IdempotencyKey{"u1", "u2", "u3"} {
			suitecheck.NoError(t, insertOnce(t, s, rec(k, 1)))
			got, _, err := s.Load(ctx, k)
			suitecheck.NoError(t, err)
			prev, dup := seen[got.Rev]
			suitecheck.False(t, dup, "Rev %d of %s was %s's too", got.Rev, k, prev)
			seen[got.Rev] = k
		}
	}
	if c, ok := s.(kvledger.RecordChecker); ok {
		suitecheck.NoError(t, c.CheckRecord(rec("checked", 1)))
	}
}

func insertOnce(t *testing.T, s kvledger.Store, r kvledger.TaskState) error {
	t.Helper()
	ok, err := s.CompareAndSwap(ctxFor(t), r.Key, kvledger.TaskState{}, r)
	if err == nil {
		suitecheck.True(t, ok, "insert %s", r.Key)
	}
	return err
}
