package kvledger

import (
	"context"
	"fmt"
	"sync"

	"github.com/nats-io/nuid"

	"github.com/natscoord/natscoord/internal/clock"
)

// MemStoreOptions configures a MemStore.
type MemStoreOptions struct {
	// MaxEntries caps how many records the store keeps. Default 0:
	// unbounded. With a positive cap, every insert that takes the count
	// above the cap deletes the oldest-inserted records that hold no live
	// lease (see mem_store_eviction.go).
	//
	// Deleting records has consequences the caller accepts by setting a
	// cap: idempotency becomes a window (a deleted key can be admitted
	// and run again); a deleted failed or blocked need no longer blocks
	// late dependents (a missing need blocks nothing); and any operation
	// on a deleted key returns ErrNoKey, even for the worker that still
	// runs it after its lease ran out.
	//
	// A claimed record whose LeaseUntil is after Clock.Now() is never deleted,
	// so the cap bounds only records without a live lease; bound your
	// concurrency to bound memory. Leave MaxEntries at 0 (or use the
	// KVStore) for permanent idempotency.
	MaxEntries int
	// Clock is the clock eviction uses to tell live leases (natscoord's
	// one clock interface, as kvlock.Clock). Default the system clock.
	// Its Now is called with the store's lock held and must not call
	// into the store.
	Clock clock.Clock
}

// MemStore is an in-memory Store guarded by one mutex. It is what New
// uses when given a nil Store. It also implements DependencyIndex and
// Swapper.
type MemStore struct {
	name string
	opts MemStoreOptions

	mu    sync.Mutex
	tasks map[IdempotencyKey]TaskState
	// evictQueue holds every stored key once, in insert order; only the
	// insert branch of CompareAndSwap appends and eviction removes a key
	// from both structures at once.
	evictQueue []IdempotencyKey
	// fenceFloor is the largest Fence of any deleted record: inserts are
	// raised to it, so a re-admitted key's next claim outbids every
	// token its earlier life handed out.
	fenceFloor FenceToken
	// rev is the last revision handed out: every write of any key takes
	// the next one, so a revision is never reused in this store, also
	// for a key deleted by eviction and admitted again (its events keep
	// revisions of their own).
	rev uint64
	// rdeps is the reverse dependency index: need -> dependents.
	rdeps map[IdempotencyKey]map[IdempotencyKey]struct{}
	// log keeps every write as its event (mem_store_log.go).
	log memLog
}

var (
	_ Store           = (*MemStore)(nil)
	_ Swapper         = (*MemStore)(nil)
	_ DependencyIndex = (*MemStore)(nil)
)

// NewMemStore returns an empty, unbounded MemStore.
func NewMemStore() *MemStore {
	m, _ := NewMemStoreWithOptions(MemStoreOptions{})
	return m
}

// NewMemStoreWithOptions returns an empty MemStore configured by opts. A
// negative MaxEntries returns an error wrapping ErrInvalidMaxEntries.
func NewMemStoreWithOptions(opts MemStoreOptions) (*MemStore, error) {
	if opts.MaxEntries < 0 {
		return nil, fmt.Errorf("%w: %d", ErrInvalidMaxEntries, opts.MaxEntries)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	return &MemStore{
		name:  "mem-" + nuid.Next(),
		opts:  opts,
		tasks: make(map[IdempotencyKey]TaskState),
		rdeps: make(map[IdempotencyKey]map[IdempotencyKey]struct{}),
	}, nil
}

// Name is the event source of this store: unique per MemStore instance.
func (m *MemStore) Name() string { return m.name }

// Len returns the number of stored records.
func (m *MemStore) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.tasks)
}

// Load returns key's record.
func (m *MemStore) Load(ctx context.Context, key IdempotencyKey) (TaskState, bool, error) {
	if err := ctx.Err(); err != nil {
		return TaskState{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.tasks[key]
	return s.clone(), ok, nil
}

// CompareAndSwap implements Store.
func (m *MemStore) CompareAndSwap(ctx context.Context, key IdempotencyKey, old, new TaskState) (bool, error) {
	_, ok, err := m.Swap(ctx, key, old, new)
	return ok, err
}

// Swap implements Swapper: CompareAndSwap returning the stored record.
func (m *MemStore) Swap(ctx context.Context, key IdempotencyKey, old, new TaskState) (TaskState, bool, error) {
	if err := ctx.Err(); err != nil {
		return TaskState{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, exists := m.tasks[key]
	switch {
	case !exists:
		if !isZeroOld(old) {
			return TaskState{}, false, nil
		}
		new = new.clone()
		m.rev++
		new.Rev = m.rev
		new.Fence = max(new.Fence, m.fenceFloor)
		m.tasks[key] = new
		m.logLocked(key, new.Rev, &new)
		m.evictQueue = append(m.evictQueue, key)
		m.evictLocked(key)
		return new.clone(), true, nil
	case isZeroOld(old) || !sameVersion(cur, old):
		return TaskState{}, false, nil
	}
	new = new.clone()
	m.rev++
	new.Rev = m.rev
	m.tasks[key] = new
	m.logLocked(key, new.Rev, &new)
	return new.clone(), true, nil
}

// Range calls fn for each record, in no particular order, holding the
// store's lock.
func (m *MemStore) Range(ctx context.Context, fn func(TaskState) bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range m.evictQueue {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !fn(m.tasks[k].clone()) {
			return nil
		}
	}
	return nil
}

// IndexNeeds implements DependencyIndex.
func (m *MemStore) IndexNeeds(ctx context.Context, dependent IdempotencyKey, needs []IdempotencyKey) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range needs {
		set := m.rdeps[n]
		if set == nil {
			set = make(map[IdempotencyKey]struct{})
			m.rdeps[n] = set
		}
		set[dependent] = struct{}{}
	}
	return nil
}

// Dependents implements DependencyIndex.
func (m *MemStore) Dependents(ctx context.Context, need IdempotencyKey, fn func(IdempotencyKey) bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	deps := make([]IdempotencyKey, 0, len(m.rdeps[need]))
	for d := range m.rdeps[need] {
		deps = append(deps, d)
	}
	m.mu.Unlock()
	for _, d := range deps {
		if !fn(d) {
			return nil
		}
	}
	return nil
}

// isZeroOld reports whether old asks for insert-if-absent.
func isZeroOld(old TaskState) bool {
	return old.Sequence == 0 && old.Status == "" && old.Fence == 0 && old.Rev == 0
}

// sameVersion compares the CAS tuple.
func sameVersion(a, b TaskState) bool {
	return a.Sequence == b.Sequence && a.Status == b.Status && a.Fence == b.Fence && a.Rev == b.Rev
}
