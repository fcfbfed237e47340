package kvledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/kvx"
)

// KVStoreConfig describes the bucket of a KVStore.
type KVStoreConfig struct {
	// Bucket is the KV bucket name (required). It is created when
	// missing and bound as it is otherwise. It is also the ledger's event
	// source.
	Bucket string
	// Replicas is the bucket's replication factor. Default 1; use 3 in a
	// cluster.
	Replicas int
	// Retention, when positive, keeps completed, failed and blocked
	// records for this long after their final write and then lets the
	// server delete them (a per-key TTL on that write; whole seconds, at
	// least one). Default 0: records are kept forever.
	//
	// A retention turns idempotency into a window on purpose: a key
	// submitted again after its record expired is admitted and runs
	// again, and an expired failed need no longer blocks dependents
	// admitted after it expired. Fences stay monotonic across expiry.
	// A final record that a pending or claimed task needs does not
	// expire: its Retention runs from the end of the last such task
	// (see "Retention with history" in the package doc).
	// The bucket must be created with a retention (it then has a
	// LimitMarkerTTL); binding a bucket without one fails.
	Retention time.Duration
	// Storage defaults to file storage.
	Storage jetstream.StorageType
	// MaxBytes caps the bucket size. Default unlimited.
	MaxBytes int64
	// Description is stored with a created bucket (shown by `nats kv
	// info`). Default: it names natscoord and the bucket's layout.
	Description string
}

// defaultDescription is KVStoreConfig.Description's default.
const defaultDescription = "natscoord kvledger task ledger: task.<key> records, rdep.<need>.<dependent> dependency index, sched.<name> stored schedules"

// KVStore is a Store on a JetStream KV bucket, shared by every process
// that opens the same bucket.
//
//   - Rev is the KV revision of the record's last write; CompareAndSwap is
//     one publish conditioned on it (insert: on the key having no value,
//     also over a delete or expiry marker).
//   - Load reads from the stream leader, so it sees every acknowledged
//     write also on a replicated bucket (a direct get may be answered by
//     a lagging replica).
//   - Range streams the bucket's task keys through one ordered consumer,
//     after asking the leader for the newest revision so that a follower
//     placed consumer cannot return a stale view (kvx.ScanLatest).
//   - Task payloads are stored as JSON; see TaskState for what comes back.
//   - It implements DependencyIndex with one small key per edge (see
//     kv_record.go) and Swapper.
//   - A stored value that is not a valid record returns ErrCorruptRecord
//     from every read, and compare-and-swaps never overwrite it.
type KVStore struct {
	b         *kvx.Bucket
	retention time.Duration
	// ops bounds each write and read whose ctx has no deadline, like
	// nats.go's default timeout would, without a timer per operation
	// when the ctx cannot end (kvx.OpTimeout).
	ops *kvx.OpTimeout
	// enableTried: atomicBatches has tried once to allow atomic batches
	// on a bucket created without them (kv_store_batch.go).
	enableTried atomic.Bool
	// records is the store's one watch of its records, shared by every
	// WatchRecords (watch.go).
	records *kvx.Hub
}

var (
	_ Store           = (*KVStore)(nil)
	_ Swapper         = (*KVStore)(nil)
	_ DependencyIndex = (*KVStore)(nil)
	_ Inserter        = (*KVStore)(nil)
	_ UniqueRevisions = (*KVStore)(nil)
)

// NewKVStore creates or binds the bucket described by cfg.
func NewKVStore(ctx context.Context, js jetstream.JetStream, cfg KVStoreConfig) (*KVStore, error) {
	if js == nil {
		return nil, fmt.Errorf("%w: nil JetStream", ErrInvalidConfig)
	}
	if cfg.Bucket == "" {
		return nil, fmt.Errorf("%w: empty bucket name", ErrInvalidConfig)
	}
	if cfg.Retention < 0 || (cfg.Retention > 0 && cfg.Retention < time.Second) {
		return nil, fmt.Errorf("%w: Retention %v must be 0 or at least 1s", ErrInvalidConfig, cfg.Retention)
	}
	replicas, err := kvx.CheckReplicas(cfg.Replicas)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	b, err := kvx.Open(ctx, js, kvx.Config{
		Bucket:         cfg.Bucket,
		Description:    cmp.Or(cfg.Description, defaultDescription),
		Replicas:       replicas,
		Storage:        cfg.Storage,
		MaxBytes:       cfg.MaxBytes,
		LimitMarkerTTL: cfg.Retention,
		RequireTTL:     cfg.Retention > 0,
		AtomicBatches:  true, // AdmitMany's batches: kv_store_batch.go
		History:        EventHistory,
		RePublish:      rePublish(cfg.Bucket),
	})
	if err != nil {
		return nil, fmt.Errorf("kvledger: %w", err)
	}
	s := &KVStore{b: b, retention: cfg.Retention, ops: kvx.NewOpTimeout(kvx.OpTimeoutOf(js)), records: newRecordHub(b)}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Name returns the bucket name.
func (s *KVStore) Name() string { return s.b.Name() }

// Close ends the store's writing: the one subscription its writes are
// answered on (kvx.Bucket.Close), made at its first write. A write still
// waiting fails as one whose outcome is unknown, and later writes are
// refused, nothing sent (both ErrClosed);
// reads and record watches go on (a watch ends when its last watcher
// stops). Its owner calls it once nothing writes through the store any
// more; a store never closed keeps the subscription until its
// connection closes. It is idempotent.
func (s *KVStore) Close() { s.b.Close() }

// OpTimeout is the bound of one store operation (one read or one
// write, each of its internal retries included): the JetStream handle's
// default timeout, 5 s when it has none. A caller's longer deadline does
// not lift it.
func (s *KVStore) OpTimeout() time.Duration { return s.ops.Duration() }

// Load implements Store.
func (s *KVStore) Load(ctx context.Context, key IdempotencyKey) (TaskState, bool, error) {
	if key == "" {
		return TaskState{}, false, nil
	}
	octx, cancel := s.ops.Bound(ctx)
	e, err := s.b.Get(octx, taskKey(key))
	cancel()
	if errors.Is(err, kvx.ErrNotFound) {
		return TaskState{}, false, nil
	}
	if err != nil {
		return TaskState{}, false, fmt.Errorf("kvledger: load %q: %w", string(key), err)
	}
	rec, err := decodeRecord(key, e.Value, e.Revision)
	if err != nil {
		return TaskState{}, false, err
	}
	return rec, true, nil
}

// CompareAndSwap implements Store.
func (s *KVStore) CompareAndSwap(ctx context.Context, key IdempotencyKey, old, new TaskState) (bool, error) {
	_, ok, err := s.Swap(ctx, key, old, new)
	return ok, err
}

// Swap implements Swapper. Only old.Rev is compared (it names one stored
// message). A write whose outcome is unknown (timeout, lost connection) is
// resolved by reading the key back: it succeeded when the key's last
// message is this very write (its Nats-Msg-Id); otherwise the original error is returned,
// never a false "lost the race".
func (s *KVStore) Swap(ctx context.Context, key IdempotencyKey, old, new TaskState) (TaskState, bool, error) {
	stored, ok, _, err := s.swap(ctx, key, old, new)
	return stored, ok, err
}

// Insert implements Inserter: an insert-if-absent that, when it loses
// because the key holds a live value, returns that value decoded (the
// conflict path of kvx.Bucket.Acquire already read it from the stream
// leader), so Admit of an existing key needs no further read.
func (s *KVStore) Insert(ctx context.Context, key IdempotencyKey, new TaskState) (TaskState, bool, TaskState, bool, error) {
	stored, ok, live, err := s.swap(ctx, key, TaskState{}, new)
	if err != nil || ok || live.Revision == 0 || !live.Live() {
		return stored, ok, TaskState{}, false, err
	}
	cur, err := decodeRecord(key, live.Value, live.Revision)
	if err != nil {
		return TaskState{}, false, TaskState{}, false, err
	}
	return TaskState{}, false, cur, true, nil
}

// swap is Swap that also returns, on a lost insert, the live entry the
// key holds when kvx reported it (zero otherwise).
func (s *KVStore) swap(ctx context.Context, key IdempotencyKey, old, new TaskState) (TaskState, bool, kvx.Entry, error) {
	value, ttl, insert, lost, err := s.swapValue(key, old, new)
	if err != nil || lost {
		return TaskState{}, false, kvx.Entry{}, err
	}
	k := taskKey(key)
	var (
		rev  uint64
		live kvx.Entry
	)
	id := writeID()
	// A final write under a retention rolls its key up: with the key's
	// history kept, its expiry would otherwise bring back an earlier
	// write of the record (see "Retention" in doc.go).
	hdr := writeHeaders(new, ttl > 0)
	octx, cancel := s.ops.Bound(ctx)
	if insert {
		rev, live, err = s.b.AcquireAs(octx, k, value, ttl, 0, id, hdr)
	} else {
		rev, err = s.b.UpdateAs(octx, k, value, old.Rev, ttl, id, hdr)
	}
	cancel()
	return s.swapped(ctx, key, new, insert, needsMoved(old, new), ttl, id, rev, live, err)
}

// swapValue checks a write of new over old under key and encodes it, with
// the TTL the record gets (retention of a final record). insert means old
// is zero (insert-if-absent); lost means the write cannot succeed (old
// names no stored message).
func (s *KVStore) swapValue(key IdempotencyKey, old, new TaskState) (value []byte, ttl time.Duration, insert, lost bool, err error) {
	if key == "" || new.Key != key {
		return nil, 0, false, false, fmt.Errorf("%w: record key %q stored under %q", ErrInvalidState, string(new.Key), string(key))
	}
	insert = isZeroOld(old)
	if !insert && old.Rev == 0 {
		return nil, 0, false, true, nil // no stored message has revision 0
	}
	if value, err = encodeRecord(new, insert); err != nil {
		return nil, 0, false, false, err
	}
	if s.retention > 0 && new.Status.final() {
		ttl = s.retention
	}
	return value, ttl, insert, false, nil
}

// swapped settles a write of new under key sent with id (awaited by swap,
// or pipelined by SwapAsync): a lost race, a write whose outcome is
// unknown read back, the error mapped, or the record as stored.
// needsMoved (an insert, or new needs) and ttl tell its retention
// (retained) what the write changed.
func (s *KVStore) swapped(ctx context.Context, key IdempotencyKey, new TaskState, insert, needsMoved bool, ttl time.Duration, id string, rev uint64, live kvx.Entry, err error) (TaskState, bool, kvx.Entry, error) {
	switch {
	case kvx.IsConflict(err):
		return TaskState{}, false, live, nil
	case kvx.OutcomeUnknown(err):
		if r, ok := s.landedWrite(taskKey(key), id); ok {
			rev, err = r, nil
		}
	}
	if errors.Is(err, kvx.ErrKeyTooLong) || errors.Is(err, kvx.ErrValueTooLarge) {
		return TaskState{}, false, kvx.Entry{}, fmt.Errorf("%w: %s: %w", ErrTooLarge, shortKey(key), err)
	}
	if err != nil {
		return TaskState{}, false, kvx.Entry{}, fmt.Errorf("kvledger: write %q: %w", string(key), closedErr(err))
	}
	stored := new.clone()
	stored.Rev = rev
	if insert {
		stored.Fence = max(stored.Fence, FenceToken(rev))
	}
	s.retained(ctx, stored, ttl, needsMoved)
	return stored, true, kvx.Entry{}, nil
}

// Range implements Store: every record, in bucket (write) order. A value
// that is not a valid record does not stop it: fn still sees every valid
// record, and Range then returns a *CorruptRecordsError naming the others.
func (s *KVStore) Range(ctx context.Context, fn func(TaskState) bool) error {
	var bad []CorruptRecord
	err := s.b.ScanLatest(ctx, taskPrefix+">", 0, func(e kvx.Entry) bool {
		key, err := keyOfTask(e.Key)
		if err == nil {
			var rec TaskState
			if rec, err = decodeRecord(key, e.Value, e.Revision); err == nil {
				return fn(rec)
			}
		} else {
			err = fmt.Errorf("%w: %w", ErrCorruptRecord, err)
		}
		bad = append(bad, CorruptRecord{Key: key, BucketKey: e.Key, Revision: e.Revision, Err: err})
		return true
	})
	if err != nil {
		return fmt.Errorf("kvledger: range: %w", err)
	}
	if len(bad) > 0 {
		return &CorruptRecordsError{Records: bad}
	}
	return nil
}

// IndexNeeds implements DependencyIndex: one key per (need, dependent),
// created once (over the marker of an earlier one that unindexNeeds
// removed, for a key admitted again after its record expired).
func (s *KVStore) IndexNeeds(ctx context.Context, dependent IdempotencyKey, needs []IdempotencyKey) error {
	for _, n := range needs {
		if n == "" || dependent == "" {
			return fmt.Errorf("%w: empty key in dependency %q -> %q", ErrInvalidState, string(dependent), string(n))
		}
		octx, cancel := s.ops.Bound(ctx)
		_, _, err := s.b.Acquire(octx, rdepKey(n, dependent), []byte("1"), 0, 0)
		cancel()
		if errors.Is(err, kvx.ErrKeyTooLong) {
			return fmt.Errorf("%w: dependency %s -> %s: %w", ErrTooLarge, shortKey(dependent), shortKey(n), err)
		}
		if err != nil && !kvx.IsConflict(err) {
			return fmt.Errorf("kvledger: index %q needs %q: %w", string(dependent), string(n), closedErr(err))
		}
	}
	return nil
}

// unindexNeeds removes dependent's index entries once its record is final
// under retention: a final record is never changed again (Admit leaves it
// alone), so nothing will walk from its needs to it, and when the record
// expires the entries would otherwise stay in the bucket for good. Each
// delete is guarded by the final record's revision rev, so it does nothing
// if the key has moved on (expired and been admitted again, with entries of
// its own). The markers expire after the retention too.
//
// It is best effort and reports nothing: the index tolerates stale entries
// (the Ledger re-reads every dependent), so an entry left behind costs
// only its space, as every entry did before this cleanup existed.
//
// The deletes run under the shared op-bounded context (OpTimeout.Shared),
// not the caller's: they follow a write that stands whatever the caller
// does next.
func (s *KVStore) unindexNeeds(dependent IdempotencyKey, needs []IdempotencyKey, rev uint64) {
	octx := s.ops.Shared()
	for _, n := range needs {
		if _, err := s.b.DeleteGuarded(octx, rdepKey(n, dependent), taskKey(dependent), rev, s.retention); err != nil {
			return
		}
	}
}

// Dependents implements DependencyIndex with one filtered scan of the
// need's index keys.
func (s *KVStore) Dependents(ctx context.Context, need IdempotencyKey, fn func(IdempotencyKey) bool) error {
	if need == "" {
		return nil
	}
	prefix := rdepPrefix + kvx.EncodeToken(string(need)) + "."
	// A caller whose ctx cannot end gets one operation's bound (a stalled
	// watch would otherwise hold it for good); a caller's own deadline is
	// kept, as the scan's consumer may take longer than one operation to
	// start on a loaded replicated stream.
	octx, cancel := ctx, context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		octx, cancel = s.ops.Bound(ctx)
	}
	defer cancel()
	var ferr error
	err := s.b.ScanLatest(octx, prefix+"*", 0, func(e kvx.Entry) bool {
		dep, err := kvx.DecodeToken(e.Key[len(prefix):])
		if err != nil {
			ferr = fmt.Errorf("%w: index key %q: %w", ErrCorruptRecord, e.Key, err)
			return false
		}
		return fn(IdempotencyKey(dep))
	})
	if err != nil {
		return fmt.Errorf("kvledger: dependents of %q: %w", string(need), err)
	}
	return ferr
}

// shortKey quotes a key for an error message, cut to its first bytes: the
// key of a too-large record may itself be the thing that is too large.
func shortKey(k IdempotencyKey) string {
	const max = 64
	if len(k) <= max {
		return fmt.Sprintf("%q", string(k))
	}
	return fmt.Sprintf("%q... (%d bytes)", string(k[:max]), len(k))
}
