package storetest

import (
	"testing"

	"github.com/natscoord/natscoord/internal/check"
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
		check.NoError(t, err)
		check.True(t, ok, "Insert of a new key")
		check.False(t, found)
		loaded, _, err := s.Load(ctx, "ins")
		check.NoError(t, err)
		check.Equal(t, loaded.Rev, stored.Rev, "Insert reports the stored Rev")
		check.Equal(t, loaded.Fence, stored.Fence)
		_, ok, cur, found, err := ins.Insert(ctx, "ins", rec("ins", 2))
		check.NoError(t, err)
		check.False(t, ok, "Insert never replaces a record")
		if found {
			check.Equal(t, loaded.Rev, cur.Rev, "the record Insert found is the stored one")
			check.Equal(t, loaded.Sequence, cur.Sequence)
		}
		again, _, err := s.Load(ctx, "ins")
		check.NoError(t, err)
		check.Equal(t, kvledger.Sequence(1), again.Sequence)
	}
	if _, ok := s.(kvledger.UniqueRevisions); ok {
		seen := map[uint64]kvledger.IdempotencyKey{}
		for _, k := range []kvledger.IdempotencyKey{"u1", "u2", "u3"} {
			check.NoError(t, insertOnce(t, s, rec(k, 1)))
			got, _, err := s.Load(ctx, k)
			check.NoError(t, err)
			prev, dup := seen[got.Rev]
			check.False(t, dup, "Rev %d of %s was %s's too", got.Rev, k, prev)
			seen[got.Rev] = k
		}
	}
	if c, ok := s.(kvledger.RecordChecker); ok {
		check.NoError(t, c.CheckRecord(rec("checked", 1)))
	}
}

func insertOnce(t *testing.T, s kvledger.Store, r kvledger.TaskState) error {
	t.Helper()
	ok, err := s.CompareAndSwap(ctxFor(t), r.Key, kvledger.TaskState{}, r)
	if err == nil {
		check.True(t, ok, "insert %s", r.Key)
	}
	return err
}
