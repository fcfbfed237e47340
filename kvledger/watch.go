package kvledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/natscoord/natscoord/internal/kvx"
)

// Change is one change of a record delivered by a RecordWatcher.
type Change struct {
	// Key is the record's key (empty on the Synced marker).
	Key IdempotencyKey
	// Record is the record as written, when Err is nil and Deleted false.
	Record TaskState
	// Deleted reports that the record left the store (Delete, retention
	// expiry, an operator's purge).
	Deleted bool
	// Rev is the revision of the change.
	Rev uint64
	// Err is set (matching ErrCorruptRecord) when the stored value is not
	// a valid record; the key should then be treated as unknown.
	Err error
	// Synced marks the end of the initial values: every record stored
	// when the watch started has been delivered before it (and the end
	// of a catch-up after Resync).
	Synced bool
	// Resync marks the start of a catch-up: the watcher fell behind, and
	// the changes up to the next Synced bring it to the current records
	// (see RecordWatcher).
	Resync bool
}

// RecordWatcher is an optional Store capability: push every change of
// every record, in store order, starting with the current records. The
// runtime builds its ready set from it, and WaitFinal waits on it, so
// neither reads the whole store more than once.
type RecordWatcher interface {
	// WatchRecords calls fn, from one goroutine and in store order, with
	// every current record, then a Change with Synced set, then every
	// later change, until Stop (or a failure of the watch, reported to
	// fn as a Change whose Err matches ErrWatchEnded). With keys, only
	// changes of those records reach fn (however many keys there are: a
	// store may watch more and drop the rest).
	//
	// A store may share one watch among its watchers and queue a bounded
	// number of changes for each: a watcher whose fn falls further behind
	// is then caught up rather than waited for, by a Change with Resync
	// set, the current record of each key whose record changed since fn
	// last saw it, a deletion for each such record that is gone (a record
	// that came and went meanwhile may get one though fn never saw it),
	// and Synced again. fn then sees each record's latest state, never an
	// older one after a newer, but not every state between.
	WatchRecords(ctx context.Context, fn func(Change), keys ...IdempotencyKey) (*RecordWatch, error)
}

// ErrWatchEnded: a record watch ended without Stop (the connection or
// the consumer behind it went away); the receiver must watch again.
var ErrWatchEnded = errors.New("kvledger: record watch ended")

// RecordWatch is a running WatchRecords.
type RecordWatch struct {
	stop func()
	done chan struct{}
	once sync.Once
}

// Stop ends the watch and waits until fn has returned for the last time.
// It is idempotent.
func (w *RecordWatch) Stop() {
	w.once.Do(w.stop)
	<-w.done
}

// Done is closed when the watch has ended (after Stop, or on failure).
func (w *RecordWatch) Done() <-chan struct{} { return w.done }

var _ RecordWatcher = (*KVStore)(nil)

// recordFeedLimit is how many changes a watcher of a KVStore's records
// may fall behind the shared watch before it is caught up from the
// store's copy of the records instead (RecordWatcher). It is what a
// watcher's queue may hold; the catch-up itself costs a look-up per
// record changed since the watcher fell behind (a pass over the records
// after the watch restarted), under the watch's lock.
var recordFeedLimit = 1 << 14 // a var for tests (export_test.go)

// newRecordHub is a KVStore's one watch of its records, stored
// schedules and paused kinds (one ordered consumer on the task, schedule
// and pause keys:
// dependency index keys are not watched) and its in-memory copy of the
// live ones, from which every WatchRecords and WatchRecordsAndSchedules
// of the store is fed (kvx.Hub's Feed). A process so runs one consumer
// per ledger store however many watchers it has (a worker, Counts,
// WaitFinal calls, a dashboard), and a watcher that starts late gets the
// records from memory. The copy costs the memory of the live records'
// and schedules' values. The view of "task" feeds WatchRecords; the view
// of every watched key ("") feeds WatchRecordsAndSchedules, records and
// schedules in one stream order. The watch reads every record and
// schedule when it starts, or, while all its watchers name keys, only
// theirs (maxWatchFilter). It stops when its last watcher stops (the
// store's Close ends only its writes); the next watcher starts it again.
func newRecordHub(b *kvx.Bucket) *kvx.Hub {
	h := b.NewHub(taskPrefix+"*", schedPrefix+"*", pausePrefix+"*")
	h.KeepView(strings.TrimSuffix(taskPrefix, "."))
	h.KeepView("")
	h.StopWhenIdle()
	h.FilterUpTo(maxWatchFilter)
	return h
}

// maxWatchFilter bounds the keys the record watch filters by subject
// while its watchers all name keys (WaitFinal's, `ledger wait`'s): a
// process that only waits for a few tasks reads those records, not the
// whole ledger (BENCHMARKS.md has the difference on a 10,000-record
// ledger). A consumer with thousands of filter subjects is slow for the
// server to create, so beyond this the watch reads every record and each
// watcher drops the others.
const maxWatchFilter = 64

// WatchRecords implements RecordWatcher on the store's one record watch
// (newRecordHub). With keys, only their changes are queued for fn.
func (s *KVStore) WatchRecords(ctx context.Context, fn func(Change), keys ...IdempotencyKey) (*RecordWatch, error) {
	return s.watchRecords(ctx, fn, nil, nil, keys...)
}

// watchRecords is WatchRecords; with onSched or onPause (and no keys) its
// feed covers the schedule and pause keys too, and their changes go to
// onSched and onPause (when not nil), in the same order as the records'
// (kv_schedule_watch.go).
func (s *KVStore) watchRecords(ctx context.Context, fn func(Change), onSched func(ScheduleChange), onPause func(PauseChange), keys ...IdempotencyKey) (*RecordWatch, error) {
	prefix := strings.TrimSuffix(taskPrefix, ".")
	var (
		f   *kvx.Feed
		err error
	)
	switch {
	case onSched != nil || onPause != nil:
		f, err = s.records.Feed(ctx, "", nil, recordFeedLimit)
	case len(keys) > 0:
		bkeys := make([]string, len(keys))
		for i, k := range keys {
			bkeys[i] = taskKey(k)
		}
		f, err = s.records.FeedKeys(ctx, prefix, bkeys, recordFeedLimit)
	default:
		f, err = s.records.Feed(ctx, prefix, nil, recordFeedLimit)
	}
	if err != nil {
		return nil, fmt.Errorf("kvledger: watch: %w", err)
	}
	// Stop is the feed's Close: it ends Each, which then returns nil.
	w := &RecordWatch{stop: f.Close, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer f.Close()
		err := f.Each(nil, func(it kvx.FeedItem) bool {
			switch {
			case it.Resumed:
				// Records are rewritten, not expired, while claimed: a
				// missed expiry of a final record's retention only
				// leaves it in memory.
			case it.Resync:
				fn(Change{Resync: true})
			case it.Synced:
				fn(Change{Synced: true})
			case strings.HasPrefix(it.Key, schedPrefix):
				if onSched != nil {
					onSched(scheduleChangeOf(it.Entry))
				}
			case strings.HasPrefix(it.Key, pausePrefix):
				if onPause != nil {
					onPause(pauseChangeOf(it.Entry))
				}
			default:
				fn(changeOf(it.Entry))
			}
			return true
		})
		if err != nil {
			fn(Change{Err: ErrWatchEnded})
		}
	}()
	return w, nil
}

// changeOf decodes one watched entry of a task key.
func changeOf(e kvx.Entry) Change {
	key, err := keyOfTask(e.Key)
	if err != nil {
		return Change{Rev: e.Revision, Err: err}
	}
	c := Change{Key: key, Rev: e.Revision}
	if !e.Live() {
		c.Deleted = true
		return c
	}
	c.Record, c.Err = decodeRecord(key, e.Value, e.Revision)
	return c
}

// WaitFinal blocks until every key has a completed, failed or blocked
// record, woken by the store's watch (no polling), and returns the final
// records. A key without a record is waited for too (it may be admitted
// later). The store must implement RecordWatcher (ErrNoWatch). ctx
// bounds the wait; on its end the records seen final so far are
// returned with ctx's error.
//
// The watch is shared and may lag the caller's own writes (a Reopen just
// acknowledged, say), so when every key looks final WaitFinal reads each
// record once from the store and waits on while one has moved past what
// the watch showed: a wait never answers with a state older than a write
// the caller saw acknowledged. A read that fails leaves the watch's
// answer as it is.
func (l *Ledger) WaitFinal(ctx context.Context, keys ...IdempotencyKey) (map[IdempotencyKey]TaskState, error) {
	rw, ok := l.store.(RecordWatcher)
	if !ok {
		return nil, ErrNoWatch
	}
	want := make(map[IdempotencyKey]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	var (
		mu    sync.Mutex
		final = make(map[IdempotencyKey]TaskState, len(keys))
		werr  error
		ended bool
		// looked is signalled when every key looks final on the watch.
		looked = make(chan struct{}, 1)
	)
	if len(want) == 0 {
		return final, nil
	}
	w, err := rw.WatchRecords(ctx, func(c Change) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case errors.Is(c.Err, ErrWatchEnded):
			if !ended {
				ended, werr = true, c.Err
			}
		case c.Synced || c.Err != nil || !want[c.Key]:
		case c.Deleted:
			delete(final, c.Key)
		case c.Record.Status.final():
			if old, ok := final[c.Key]; !ok || c.Record.Rev >= old.Rev {
				final[c.Key] = c.Record
			}
		default:
			if old, ok := final[c.Key]; ok && old.Rev < c.Rev {
				delete(final, c.Key)
			}
		}
		if ended || len(final) == len(want) {
			select {
			case looked <- struct{}{}:
			default:
			}
		}
	}, keys...)
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	for {
		select {
		case <-looked:
		case <-ctx.Done():
			mu.Lock()
			defer mu.Unlock()
			return copyStates(final), ctx.Err()
		}
		mu.Lock()
		if ended {
			defer mu.Unlock()
			return copyStates(final), werr
		}
		seen := copyStates(final)
		mu.Unlock()
		if len(seen) == len(want) && l.confirmFinal(ctx, seen, &mu, final) {
			return seen, nil
		}
	}
}

// confirmFinal reads each of seen's records from the store: a record
// that moved past the watch's (not final, or gone) is dropped from final
// (under mu) and false returned, so WaitFinal waits for the watch to
// bring it; a final one read newer replaces its entry in seen.
func (l *Ledger) confirmFinal(ctx context.Context, seen map[IdempotencyKey]TaskState, mu *sync.Mutex, final map[IdempotencyKey]TaskState) bool {
	for k, v := range seen {
		cur, err := l.load(ctx, k)
		switch {
		case err != nil && !errors.Is(err, ErrNoKey):
			continue // unread: the watch's answer stands
		case err == nil && cur.Rev <= v.Rev:
			continue
		case err == nil && cur.Status.final():
			seen[k] = cur
			continue
		}
		mu.Lock()
		if f, ok := final[k]; ok && f.Rev == v.Rev {
			delete(final, k)
		}
		mu.Unlock()
		return false
	}
	return true
}

func copyStates(m map[IdempotencyKey]TaskState) map[IdempotencyKey]TaskState {
	out := make(map[IdempotencyKey]TaskState, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// IsFinal reports whether a record in status s never changes again
// (completed, failed or blocked).
func IsFinal(s Status) bool { return s.final() }
