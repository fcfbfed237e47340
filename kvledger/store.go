package kvledger

import "context"

// Store holds the records of one ledger. The Ledger needs nothing else.
//
// CompareAndSwap writes new only when the stored record still matches old
// on (Sequence, Status, Fence, Rev); a store whose Rev identifies one
// stored version exactly (the KVStore: the KV revision) may compare Rev
// alone, which is equivalent when old came from Load. A zero old (all four
// fields zero) means insert-if-absent: it succeeds only when the key has
// no record, and for the KVStore also when its last entry is a delete or
// expiry marker. A mismatch returns false and no error; an error means
// the store could not tell (transient fault, corrupt record), never
// contention.
//
// Rev: every successful write gives the record a Rev larger than any Rev
// that key had before, and a Store never hands the same Rev to two
// versions of one key (events carry it as their revision: it identifies
// the write). How the Ledger learns the new Rev depends on the
// Store:
//
//   - A Swapper returns the stored record, Rev included; its Revs may grow
//     by any amount (the KVStore uses the bucket's revision, the MemStore
//     one counter per store).
//   - A Store without Swapper must give an inserted record Rev 0 and add
//     exactly 1 on every further write of it: the Ledger computes the Rev
//     of what it wrote by that rule, and a store that grows Rev otherwise
//     makes the Ledger's claim cache name revisions no record has. Such a
//     store cannot delete and
//     re-admit a key without reusing its Revs: a store that deletes
//     records implements Swapper. storetest checks both rules.
//
// On insert a Store may raise new.Fence so that fence tokens of a key
// never decrease across deletion and re-admission.
//
// Range calls fn for every record until fn returns false. fn must not
// call back into the same Store (a Store may hold a lock during Range).
type Store interface {
	Load(ctx context.Context, key IdempotencyKey) (TaskState, bool, error)
	CompareAndSwap(ctx context.Context, key IdempotencyKey, old TaskState, new TaskState) (bool, error)
	Range(ctx context.Context, fn func(TaskState) bool) error
}

// Swapper is an optional Store capability: CompareAndSwap that also
// returns the record as stored (with its new Rev and any raised Fence).
// The Ledger uses it to put the right revision on events; without it the
// Ledger assumes the Store follows the "Rev counts up by one per write,
// starting at zero" rule.
type Swapper interface {
	Swap(ctx context.Context, key IdempotencyKey, old TaskState, new TaskState) (TaskState, bool, error)
}

// DependencyIndex is an optional Store capability: a reverse index from
// a need to the keys that named it, so that failure propagation and
// late-admission checks cost the size of the dependency graph around a
// key, not the size of the ledger. Both stores here implement it; a Store
// without it makes Complete(StatusFailed) fall back to a full Range.
//
// The index may hold stale entries (a record rebased with other needs, or
// deleted): the Ledger re-reads every dependent and checks its Needs
// before acting, so IndexNeeds only has to be written BEFORE the record
// that names the needs (Admit does that) and never has to be removed. A
// store may remove the entries of a final record (the KVStore does under
// retention, so they leave the bucket with it).
type DependencyIndex interface {
	// IndexNeeds records that dependent names each of needs. It is
	// idempotent.
	IndexNeeds(ctx context.Context, dependent IdempotencyKey, needs []IdempotencyKey) error
	// Dependents calls fn for every key recorded as naming need, until
	// fn returns false.
	Dependents(ctx context.Context, need IdempotencyKey, fn func(IdempotencyKey) bool) error
}

// namedStore is implemented by stores that know a stable name for event
// sources (the bucket name for the KVStore).
type namedStore interface {
	Name() string
}

// Inserter is an optional Store capability: insert-if-absent that, when
// the key already holds a record, may return it (found true) so the
// caller can decide without loading it again. ok true means new was
// inserted and stored is the record as stored (Rev set, Fence maybe
// raised); ok false with found false means the record is not known and
// must be loaded. Admit uses it for its one-round-trip fast path.
type Inserter interface {
	Insert(ctx context.Context, key IdempotencyKey, new TaskState) (stored TaskState, ok bool, cur TaskState, found bool, err error)
}

// RecordChecker is an optional Store capability: CheckRecord reports,
// without writing, whether the store could store rec (it encodes, and
// its key and value fit the server's limits). Restore checks every record
// with it before the first write. The KVStore implements it.
type RecordChecker interface {
	CheckRecord(rec TaskState) error
}
