package storetest

import (
	"encoding/json"
	"testing"

	"github.com/natscoord/natscoord/internal/check"
	"github.com/natscoord/natscoord/kvledger"
)

func testStoreContract(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	s := newStore(t)

	_, found, err := s.Load(ctx, "missing")
	check.NoError(t, err)
	check.False(t, found)

	rec := kvledger.TaskState{
		Key: "k", Status: kvledger.StatusPending, Sequence: 1,
		Task:      map[string]any{"n": json.Number("9007199254740993"), "tags": []any{"a", "b"}},
		Needs:     []kvledger.IdempotencyKey{"dep"},
		CreatedBy: "me", CreatedAt: t0, UpdatedBy: "me", UpdatedAt: t0,
	}
	// A non-zero old against an absent key fails.
	ok, err := s.CompareAndSwap(ctx, "k", kvledger.TaskState{Sequence: 1, Status: kvledger.StatusPending}, rec)
	check.NoError(t, err)
	check.False(t, ok)
	// Zero old inserts once.
	ok, err = s.CompareAndSwap(ctx, "k", kvledger.TaskState{}, rec)
	check.NoError(t, err)
	check.True(t, ok)
	ok, err = s.CompareAndSwap(ctx, "k", kvledger.TaskState{}, rec)
	check.NoError(t, err)
	check.False(t, ok, "insert-if-absent over an existing record")

	got, found, err := s.Load(ctx, "k")
	check.NoError(t, err)
	check.True(t, found)
	check.Equal(t, rec.Key, got.Key)
	check.Equal(t, rec.Status, got.Status)
	check.Equal(t, rec.Needs, got.Needs)
	check.Equal(t, rec.Task, got.Task, "a JSON-shaped task round-trips")
	check.True(t, rec.CreatedAt.Equal(got.CreatedAt))

	// A CAS with the loaded record succeeds and moves Rev forward.
	next := got
	next.Status, next.Owner, next.Fence, next.LeaseUntil = kvledger.StatusClaimed, "w", got.Fence+1, t0.Add(lease)
	next.Lease = "kvledger.b.w.owner-1"
	ok, err = s.CompareAndSwap(ctx, "k", got, next)
	check.NoError(t, err)
	check.True(t, ok)
	got2, _, err := s.Load(ctx, "k")
	check.NoError(t, err)
	check.Greater(t, got2.Rev, got.Rev)
	check.Equal(t, kvledger.StatusClaimed, got2.Status)
	check.Equal(t, got.Fence+1, got2.Fence)
	check.Equal(t, next.Lease, got2.Lease, "the claim's lease round-trips")

	// The stale version (same Sequence/Status/Fence, old Rev) loses.
	stale := got
	ok, err = s.CompareAndSwap(ctx, "k", stale, next)
	check.NoError(t, err)
	check.False(t, ok, "stale Rev must lose")
	// Two writers with the same loaded version: exactly one wins.
	a, b := got2, got2
	a.LeaseUntil, b.LeaseUntil = t0.Add(2*lease), t0.Add(3*lease)
	okA, err := s.CompareAndSwap(ctx, "k", got2, a)
	check.NoError(t, err)
	okB, err := s.CompareAndSwap(ctx, "k", got2, b)
	check.NoError(t, err)
	check.True(t, okA)
	check.False(t, okB, "the second renewal on the same version must lose")

	// Range sees every record once.
	for _, k := range []kvledger.IdempotencyKey{"x.y", "with space", "ünï/cødé", "a=b"} {
		r := rec
		r.Key, r.Needs = k, nil
		ok, err := s.CompareAndSwap(ctx, k, kvledger.TaskState{}, r)
		check.NoError(t, err)
		check.True(t, ok, "insert %q", k)
		l, found, err := s.Load(ctx, k)
		check.NoError(t, err)
		check.True(t, found)
		check.Equal(t, k, l.Key)
	}
	seen := map[kvledger.IdempotencyKey]int{}
	check.NoError(t, s.Range(ctx, func(ts kvledger.TaskState) bool {
		seen[ts.Key]++
		return true
	}))
	check.Equal(t, map[kvledger.IdempotencyKey]int{"k": 1, "x.y": 1, "with space": 1, "ünï/cødé": 1, "a=b": 1}, seen)
	n := 0
	check.NoError(t, s.Range(ctx, func(kvledger.TaskState) bool { n++; return false }))
	check.Equal(t, 1, n, "Range stops when fn returns false")

	if idx, ok := s.(kvledger.DependencyIndex); ok {
		check.NoError(t, idx.IndexNeeds(ctx, "child", []kvledger.IdempotencyKey{"p.1", "p 2"}))
		check.NoError(t, idx.IndexNeeds(ctx, "child", []kvledger.IdempotencyKey{"p.1"}), "idempotent")
		check.NoError(t, idx.IndexNeeds(ctx, "child2", []kvledger.IdempotencyKey{"p.1"}))
		var deps []kvledger.IdempotencyKey
		check.NoError(t, idx.Dependents(ctx, "p.1", func(k kvledger.IdempotencyKey) bool { deps = append(deps, k); return true }))
		check.ElementsMatch(t, []kvledger.IdempotencyKey{"child", "child2"}, deps)
		deps = nil
		check.NoError(t, idx.Dependents(ctx, "p", func(k kvledger.IdempotencyKey) bool { deps = append(deps, k); return true }))
		check.Empty(t, deps, "prefix of another need is not that need")
	}
}
