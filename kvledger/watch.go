package kvledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

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
	// when the watch started has been delivered before it.
	Synced bool
}

// RecordWatcher is an optional Store capability: push every change of
// every record, in store order, starting with the current records. The
// runtime builds its ready set from it, and WaitFinal waits on it, so
// neither reads the whole store more than once.
type RecordWatcher interface {
	// WatchRecords calls fn, from one goroutine and in store order, with
	// every current record, then a Change with Synced set, then every
	// later change, until Stop (or a failure of the watch, reported to
	// fn as a Change whose Err matches ErrWatchEnded). fn must not block
	// for long: the watch waits for it. With keys, only changes of those
	// records reach fn (however many keys there are: a store may watch
	// more and drop the rest).
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

// maxWatchFilter bounds the keys a watch filters by subject: a consumer
// with thousands of filter subjects is slow for the server to create
// (5000 timed out here), while watching every task key and dropping the
// others costs one pass over the ledger.
const maxWatchFilter = 64

// WatchRecords implements RecordWatcher with one ordered consumer on the
// bucket's task keys (dependency index keys are not watched), or on the
// given keys only: by subject for up to maxWatchFilter keys, beyond that
// by watching every task key and dropping the changes of the others.
func (s *KVStore) WatchRecords(ctx context.Context, fn func(Change), keys ...IdempotencyKey) (*RecordWatch, error) {
	return s.watchRecords(ctx, fn, nil, keys...)
}

// watchRecords is WatchRecords; with onSched (and no keys) the same
// consumer also watches the schedule keys and hands their changes to
// onSched (kv_schedule_watch.go).
func (s *KVStore) watchRecords(ctx context.Context, fn func(Change), onSched func(ScheduleChange), keys ...IdempotencyKey) (*RecordWatch, error) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var (
		kw   jetstream.KeyWatcher
		err  error
		only map[string]bool // when set, deliver changes of these bucket keys only
	)
	if len(keys) > maxWatchFilter {
		only = make(map[string]bool, len(keys))
		for _, k := range keys {
			only[taskKey(k)] = true
		}
	}
	switch {
	case onSched != nil:
		kw, err = s.b.KV().WatchFiltered(wctx, []string{taskPrefix + "*", schedPrefix + "*"})
	case len(keys) == 0 || only != nil:
		kw, err = s.b.KV().Watch(wctx, taskPrefix+"*")
	default:
		subjects := make([]string, len(keys))
		for i, k := range keys {
			subjects[i] = taskKey(k)
		}
		kw, err = s.b.KV().WatchFiltered(wctx, subjects)
	}
	if err != nil {
		cancel()
		return nil, fmt.Errorf("kvledger: watch: %w", err)
	}
	w := &RecordWatch{done: make(chan struct{})}
	var stopped sync.Once
	halt := func() {
		stopped.Do(func() {
			_ = kw.Stop()
			cancel()
		})
	}
	w.stop = halt
	go func() {
		defer close(w.done)
		defer halt()
		for e := range kw.Updates() {
			if e == nil {
				fn(Change{Synced: true})
				continue
			}
			if onSched != nil && strings.HasPrefix(e.Key(), schedPrefix) {
				onSched(scheduleChangeOf(kvx.FromWatch(e)))
				continue
			}
			if only != nil && !only[e.Key()] {
				continue // dropped before its value is decoded
			}
			fn(changeOf(kvx.FromWatch(e)))
		}
		if wctx.Err() == nil {
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
		mu     sync.Mutex
		final  = make(map[IdempotencyKey]TaskState, len(keys))
		werr   error
		doneCh = make(chan struct{})
		closed bool
	)
	finish := func(err error) {
		if !closed {
			closed, werr = true, err
			close(doneCh)
		}
	}
	if len(want) == 0 {
		return final, nil
	}
	w, err := rw.WatchRecords(ctx, func(c Change) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case errors.Is(c.Err, ErrWatchEnded):
			finish(c.Err)
		case c.Synced || c.Err != nil || !want[c.Key]:
		case c.Deleted:
			delete(final, c.Key)
		case c.Record.Status.final():
			final[c.Key] = c.Record
		default:
			delete(final, c.Key)
		}
		if len(final) == len(want) {
			finish(nil)
		}
	}, keys...)
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	select {
	case <-doneCh:
	case <-ctx.Done():
		mu.Lock()
		finish(ctx.Err())
		mu.Unlock()
	}
	mu.Lock()
	defer mu.Unlock()
	out := make(map[IdempotencyKey]TaskState, len(final))
	for k, v := range final {
		out[k] = v
	}
	return out, werr
}

// IsFinal reports whether a record in status s never changes again
// (completed, failed or blocked).
func IsFinal(s Status) bool { return s.final() }
