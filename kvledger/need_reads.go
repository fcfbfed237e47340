package kvledger

import "context"

// needReads is what one claim attempt read of its record's needs, by
// key. Judge's readiness check (claimEvent) and the closure check
// (blockingAncestor) of the same attempt both look needs up through it,
// so each need is read from the store once per attempt. A lost
// compare-and-swap starts the next attempt with a fresh one: a need may
// have changed since.
type needReads map[IdempotencyKey]needRead

// needRead is one need's record, found false when it has none.
type needRead struct {
	rec   TaskState
	found bool
}

// load returns the record of key from r, reading it from store and
// noting it in r (made on first use) when r has not seen it.
func (r *needReads) load(ctx context.Context, store Store, key IdempotencyKey) (TaskState, bool, error) {
	if n, ok := (*r)[key]; ok {
		return n.rec, n.found, nil
	}
	s, found, err := store.Load(ctx, key)
	if err != nil {
		return TaskState{}, false, err
	}
	if *r == nil {
		*r = make(needReads)
	}
	(*r)[key] = needRead{rec: s, found: found}
	return s, found, nil
}
