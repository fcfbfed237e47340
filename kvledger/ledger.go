package kvledger

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Ledger admits tasks once per idempotency key, hands them to workers
// under fenced leases, and blocks the dependents of failed tasks, over one
// Store. It is safe for concurrent use; every method is a sequence of
// loads and compare-and-swaps, so any number of Ledgers (in any number of
// processes) may share one KVStore bucket.
type Ledger struct {
	store  Store
	source string
	swap   Swapper         // nil when the store lacks it
	index  DependencyIndex // nil when the store lacks it
	// confirm is nil when the store's "not found" needs no confirmation.
	confirm absenceConfirmer
	// leases reads the leases that runtime claims name (WithLeases); nil
	// when the Ledger has none, and then such claims are never taken.
	leases LeaseReader
	// taker is leases when it can take leases too: claims made by
	// this Ledger then hold one (WithLeases).
	taker LeaseTaker
	// guards holds the leases of this Ledger's claims (claim_guards.go).
	guards claimGuards

	// afterWrite is a test hook run right after a successful write;
	// returning an error aborts the operation there, as if the process
	// had died.
	afterWrite func(key IdempotencyKey, rec TaskState) error

	claims   claims
	remember bool // the store's revisions are unique: use claims
}

// Option configures a Ledger.
type Option func(*Ledger) error

// WithSource sets the ledger's name where a store has none of its own.
// Default: the store's name (the bucket for a KVStore, a unique name per
// MemStore), or "kvledger". A store's own name is the source of its
// events and the prefix of its claims' lease keys, so a name that differs
// from it is refused (ErrInvalidConfig) rather than applied to some of
// them.
func WithSource(name string) Option {
	return func(l *Ledger) error {
		if name == "" {
			return fmt.Errorf("%w: empty source", ErrInvalidConfig)
		}
		if n, ok := l.store.(namedStore); ok && n.Name() != "" && n.Name() != name {
			return fmt.Errorf("%w: source %q: the store is named %q", ErrInvalidConfig, name, n.Name())
		}
		l.source = name
		return nil
	}
}

// New returns a Ledger over store. A nil store means a fresh MemStore.
// Its events are the store's writes (see "Events" in doc.go): the Ledger
// publishes nothing and owns no goroutine.
func New(store Store, opts ...Option) (*Ledger, error) {
	if store == nil {
		store = NewMemStore()
	}
	l := &Ledger{store: store, source: "kvledger"}
	if n, ok := store.(namedStore); ok && n.Name() != "" {
		l.source = n.Name()
	}
	l.swap, _ = store.(Swapper)
	l.index, _ = store.(DependencyIndex)
	l.confirm, _ = store.(absenceConfirmer)
	_, l.remember = store.(UniqueRevisions)
	for _, o := range opts {
		if o == nil {
			continue // no option (also what a caller of the older New(store, nil) passes)
		}
		if err := o(l); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Store returns the ledger's store.
func (l *Ledger) Store() Store { return l.store }

// Admit records task under key once. It inserts a pending record when the
// key has none, and rebases a pending or claimed record when seq is
// higher than the stored Sequence (the new task, needs and sequence
// replace the old ones; Owner and LeaseUntil are cleared while Fence,
// CreatedBy and CreatedAt carry over, so the next Claim outbids the old
// owner). It returns false and no error when the stored record has a
// Sequence at or above seq or is completed, failed or blocked: a retry or
// late duplicate is not an error.
//
// When a need's record is failed or blocked, the new record lands blocked
// by that need. Reading a need can fail; Admit then fails too rather than
// guess. After inserting a pending record, Admit reads the needs once more
// and blocks the record if one failed in between (a concurrent
// Complete(failed) may have walked the dependents before this record
// existed); an error on that re-read is returned with the record left
// pending, and Claim's closure check still stops it from running.
//
// The record is validated before any write: a key that needs itself, for
// example, returns false and the Validate error, and so does a key or
// need holding a control character (see checkNewKeys).
func (l *Ledger) Admit(ctx context.Context, actor Actor, key IdempotencyKey, seq Sequence, task any, now time.Time, needs ...IdempotencyKey) (bool, error) {
	_, ok, err := l.admit(ctx, actor, key, seq, task, now, needs, runtimeFields{})
	return ok, err
}

// checkAdmission is the check of an admission before any write: the
// record it would write validates, and its key and needs hold no control
// character.
func checkAdmission(key IdempotencyKey, seq Sequence, needs []IdempotencyKey, rt runtimeFields) error {
	probe := TaskState{Key: key, Status: StatusPending, Sequence: seq, Needs: needs}
	rt.apply(&probe)
	if err := probe.Validate(); err != nil {
		return err
	}
	return checkNewKeys(key, needs)
}

// admit is Admit with the runtime fields of a Submission. It also returns
// the record the admission decided on: the one it wrote (blocked by its
// recheck when that blocked it), or, when it admitted nothing, the stored
// record that made it a no-op.
func (l *Ledger) admit(ctx context.Context, actor Actor, key IdempotencyKey, seq Sequence, task any, now time.Time, needs []IdempotencyKey, rt runtimeFields) (TaskState, bool, error) {
	needs = slices.Clone(needs)
	if err := checkAdmission(key, seq, needs, rt); err != nil {
		return TaskState{}, false, err
	}
	if l.index != nil && len(needs) > 0 {
		// Index first: a failure walk that starts after this point finds
		// the dependent (or its record is not there yet, and the recheck
		// below catches it).
		if err := l.index.IndexNeeds(ctx, key, needs); err != nil {
			return TaskState{}, false, err
		}
	}
	admitted := func(found bool, cur TaskState) TaskState {
		next := TaskState{
			Key: key, Status: StatusPending, Sequence: seq, Needs: needs, Task: task,
			CreatedBy: actor, CreatedAt: now, UpdatedBy: actor, UpdatedAt: now,
		}
		rt.apply(&next)
		next.LastEvent = admissionEvent(next)
		if found {
			next.Fence, next.CreatedBy, next.CreatedAt = cur.Fence, cur.CreatedBy, cur.CreatedAt
		}
		return next
	}
	done := func(rec TaskState) (TaskState, bool, error) {
		if rec.Status == StatusPending {
			blocked, wrote, err := l.recheckNeeds(ctx, actor, rec, now)
			if wrote {
				rec = blocked
			}
			return rec, true, err
		}
		return rec, true, nil
	}

	// Fast path, the common case of a new key: insert first, in one round
	// trip on a KVStore, and decide on the stored record only when the key
	// turns out to hold one. It decides an absent key as the loop below
	// does: the needs are read before the write (they pick pending or
	// blocked), and the recheck after it covers a need failing in between.
	// Any doubt (a need read failing, a record that does not validate)
	// drops to the loop below, which reads the key first and so returns
	// the same result and error as a ledger without the fast path.
	var (
		cur     TaskState
		found   bool
		known   bool           // cur/found hold the key's state: no Load needed
		blocker IdempotencyKey // with known: the needs as read just now
	)
	if b, err := l.firstBlockingNeed(ctx, needs); err == nil {
		next := admitted(false, TaskState{})
		if b != "" {
			next.Status, next.BlockedBy = StatusBlocked, b
		}
		if next.Validate() == nil {
			rec, ok, c, f, err := l.insert(ctx, next)
			switch {
			case err != nil && !isEncodeError(err):
				return TaskState{}, false, err
			case err != nil: // the loop reports it unless the key is a duplicate
			case ok:
				return done(rec)
			default:
				cur, found, known, blocker = c, f, f, b
			}
		}
	}
	for {
		if !known {
			var err error
			if cur, found, err = l.store.Load(ctx, key); err != nil {
				return TaskState{}, false, err
			}
		}
		if found && (cur.Sequence >= seq || cur.Status.final()) {
			return cur, false, nil
		}
		next := admitted(found, cur)
		if !known {
			var err error
			if blocker, err = l.firstBlockingNeed(ctx, needs); err != nil {
				return TaskState{}, false, err
			}
		}
		known = false
		if blocker != "" {
			next.Status, next.BlockedBy = StatusBlocked, blocker
		}
		if err := next.Validate(); err != nil {
			return TaskState{}, false, err
		}
		rec, ok, err := l.write(ctx, cur, found, next)
		if err != nil {
			return TaskState{}, false, err
		}
		if !ok {
			continue // someone else wrote the key; decide again
		}
		return done(rec)
	}
}

// recheckNeeds blocks a freshly admitted record when one of its needs
// failed or got blocked after Admit first looked; wrote reports that it
// did, with the blocked record it wrote.
func (l *Ledger) recheckNeeds(ctx context.Context, actor Actor, rec TaskState, now time.Time) (blocked TaskState, wrote bool, err error) {
	blocker, err := l.firstBlockingNeed(ctx, rec.Needs)
	if err != nil || blocker == "" {
		return TaskState{}, false, err
	}
	return l.block(ctx, actor, rec, blocker, now)
}

// firstBlockingNeed returns the first of needs whose record is failed or
// blocked, or "". Several needs are read concurrently (one round trip of
// wall time on a KVStore, not one per need) and judged in order, so the
// answer, and which error wins, is that of reading them one by one and
// stopping at the first blocker or error.
func (l *Ledger) firstBlockingNeed(ctx context.Context, needs []IdempotencyKey) (IdempotencyKey, error) {
	if len(needs) <= 1 {
		for _, n := range needs {
			s, found, err := l.store.Load(ctx, n)
			if err != nil {
				return "", err
			}
			if found && s.Status.blocks() {
				return n, nil
			}
		}
		return "", nil
	}
	type result struct {
		blocks bool
		err    error
	}
	res := make([]result, len(needs))
	var wg sync.WaitGroup
	for i, n := range needs {
		wg.Go(func() {
			s, found, err := l.store.Load(ctx, n)
			res[i] = result{blocks: found && s.Status.blocks(), err: err}
		})
	}
	wg.Wait()
	for i, r := range res {
		if r.err != nil {
			return "", r.err
		}
		if r.blocks {
			return needs[i], nil
		}
	}
	return "", nil
}

// State returns key's record; found is false when it has none. Only a
// Store failure is an error. On a KVStore the read goes to the stream
// leader, so it sees every acknowledged write.
func (l *Ledger) State(ctx context.Context, key IdempotencyKey) (TaskState, bool, error) {
	return l.store.Load(ctx, key)
}

// Absent returns those of keys that have no record, in their order: one
// read each, as State. It is how a caller learns that a key it waits for,
// or a need it named, is not admitted (yet); admission takes such a need.
func (l *Ledger) Absent(ctx context.Context, keys ...IdempotencyKey) ([]IdempotencyKey, error) {
	var absent []IdempotencyKey
	for _, k := range keys {
		_, found, err := l.store.Load(ctx, k)
		if err != nil {
			return nil, err
		}
		if !found {
			absent = append(absent, k)
		}
	}
	return absent, nil
}

// Blocked returns the key that blocks key, and true, when key's record is
// blocked. It returns false both for a key without a record and for a
// record that is not blocked; use State to tell them apart.
func (l *Ledger) Blocked(ctx context.Context, key IdempotencyKey) (IdempotencyKey, bool, error) {
	s, found, err := l.store.Load(ctx, key)
	if err != nil || !found || s.Status != StatusBlocked {
		return "", false, err
	}
	return s.BlockedBy, true, nil
}
