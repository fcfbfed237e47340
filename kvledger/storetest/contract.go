package storetest

import (
	"encoding/json"
	"testing"

	"github.com/natscoord/natscoord/internal/testkit/suitecheck"
	"github.com/natscoord/natscoord/kvledger"
)

func testStoreContract(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	s := newStore(t)

	_, found, err := s.Load(ctx, "missing")
	suitecheck.NoError(t, err)
	suitecheck.False(t, found)

	rec := kvledger.TaskState{
		Key: "k", Status: kvledger.StatusPending, Sequence: 1,
		Task:      map[string]any{"n": json.Number("9007199254740993"), "tags": []any{"a", "b"}},
		Needs:     []kvledger.IdempotencyKey{"dep"},
		CreatedBy: "me", CreatedAt: t0, UpdatedBy: "me", UpdatedAt: t0,
	}
	// A non-zero old against an absent key fails.
	ok, err := s.CompareAndSwap(ctx, "k", kvledger.TaskState{Sequence: 1, Status: kvledger.StatusPending}, rec)
	suitecheck.NoError(t, err)
	suitecheck.False(t, ok)
	// Zero old inserts once.
	ok, err = s.CompareAndSwap(ctx, "k", kvledger.TaskState{}, rec)
	suitecheck.NoError(t, err)
	suitecheck.True(t, ok)
	ok, err = s.CompareAndSwap(ctx, "k", kvledger.TaskState{}, rec)
	suitecheck.NoError(t, err)
	suitecheck.False(t, ok, "insert-if-absent over an existing record")

	got, found, err := s.Load(ctx, "k")
	suitecheck.NoError(t, err)
	suitecheck.True(t, found)
	suitecheck.Equal(t, rec.Key, got.Key)
	suitecheck.Equal(t, rec.Status, got.Status)
	suitecheck.Equal(t, rec.Needs, got.Needs)
	suitecheck.Equal(t, rec.Task, got.Task, "a JSON-shaped task round-trips")
	suitecheck.True(t, rec.CreatedAt.Equal(got.CreatedAt))

	// A CAS with the loaded record succeeds and moves Rev forward.
	next := got
	next.Status, next.Owner, next.Fence, next.LeaseUntil = kvledger.StatusClaimed, "w", got.Fence+1, t0.Add(lease)
	next.Lease = "kvledger.b.w.owner-1"
	ok, err = s.CompareAndSwap(ctx, "k", got, next)
	suitecheck.NoError(t, err)
	suitecheck.True(t, ok)
	got2, _, err := s.Load(ctx, "k")
	suitecheck.NoError(t, err)
	suitecheck.Greater(t, got2.Rev, got.Rev)
	suitecheck.Equal(t, kvledger.StatusClaimed, got2.Status)
	suitecheck.Equal(t, got.Fence+1, got2.Fence)
	suitecheck.Equal(t, next.Lease, got2.Lease, "the claim's lease round-trips")

	// The stale version (same Sequence/Status/Fence, old Rev) loses.
	stale := got
	ok, err = s.CompareAndSwap(ctx, "k", stale, next)
	suitecheck.NoError(t, err)
	suitecheck.False(t, ok, "stale Rev must lose")
	// Two writers with the same loaded version: exactly one wins.
	a, b := got2, got2
	a.LeaseUntil, b.LeaseUntil = t0.Add(2*lease), t0.Add(3*lease)
	okA, err := s.CompareAndSwap(ctx, "k", got2, a)
	suitecheck.NoError(t, err)
	okB, err := s.CompareAndSwap(ctx, "k", got2, b)
	suitecheck.NoError(t, err)
	suitecheck.True(t, okA)
	suitecheck.False(t, okB, "the second renewal on the same version must lose")

	// Range sees every record once.
	for _, k := range []kvledger.IdempotencyKey{"x.y", "with space", "ünï/cødé", "a=b"} {
		r := rec
		r.Key, r.Needs = k, nil
		ok, err := s.CompareAndSwap(ctx, k, kvledger.TaskState{}, r)
		suitecheck.NoError(t, err)
		suitecheck.True(t, ok, "insert %q", k)
		l, found, err := s.Load(ctx, k)
		suitecheck.NoError(t, err)
		suitecheck.True(t, found)
		suitecheck.Equal(t, k, l.Key)
	}
	seen := map[kvledger.IdempotencyKey]int{}
	suitecheck.NoError(t, s.Range(ctx, func(ts kvledger.TaskState) bool {
		seen[ts.Key]++
		return true
	}))
	suitecheck.Equal(t, map[kvledger.IdempotencyKey]int{"k": 1, "x.y": 1, "with space": 1, "ünï/cødé": 1, "a=b": 1}, seen)
	n := 0
	suitecheck.NoError(t, s.Range(ctx, func(kvledger.TaskState) bool { n++; return false }))
	suitecheck.Equal(t, 1, n, "Range stops when fn returns false")

	if idx, ok := s.(kvledger.DependencyIndex); ok {
		suitecheck.NoError(t, idx.IndexNeeds(ctx, "child", []kvledger.IdempotencyKey{"p.1", "p 2"}))
		suitecheck.NoError(t, idx.IndexNeeds(ctx, "child", []kvledger.IdempotencyKey{"p.1"}), "idempotent")
		suitecheck.NoError(t, idx.IndexNeeds(ctx, "child2", []kvledger.IdempotencyKey{"p.1"}))
		var deps []kvledger.IdempotencyKey
		suitecheck.NoError(t, idx.Dependents(ctx, "p.1", func(k kvledger.IdempotencyKey) bool { deps = append(deps, k); return true }))
		suitecheck.ElementsMatch(t, []kvledger.IdempotencyKey{"child", "child2"}, deps)
		deps = nil
		suitecheck.NoError(t, idx.Dependents(ctx, "p", func(k kvledger.IdempotencyKey) bool { deps = append(deps, k); return true }))
		suitecheck.Empty(t, deps, "prefix of another need is not that need")
	}
}
