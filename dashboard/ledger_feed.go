package dashboard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/retry"
	"github.com/natscoord/natscoord/kvledger"
)

// openLedger binds (or, with Create, makes) the ledger bucket, whose
// stream is also its event log.
func (h *Handler) openLedger(ctx context.Context) error {
	js := h.cfg.JS
	if _, err := js.KeyValue(ctx, h.cfg.Ledger); err != nil {
		if !errors.Is(err, jetstream.ErrBucketNotFound) || !h.cfg.Create {
			return fmt.Errorf("dashboard: ledger bucket %q: %w", h.cfg.Ledger, err)
		}
	}
	store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: h.cfg.Ledger})
	if err != nil {
		return fmt.Errorf("dashboard: ledger bucket %q: %w", h.cfg.Ledger, err)
	}
	h.store = store
	if h.ledger, err = kvledger.New(store); err != nil {
		return err
	}
	return nil
}

// rewatch is how a record watch that ended on its own (not by Close) is
// started again, on the one retry primitive: a pause of a second before
// each start, for as long as the dashboard lives (its Close ends it).
var rewatch = retry.Policy{Pause: time.Second, MaxPause: time.Second}

// recordFeed keeps the task view equal to the ledger's records: one
// record watch (kvledger's RecordWatcher) delivers every record, then
// every write, delete and retention expiry. The view is judged by the
// records alone; events (the same writes, read from the bucket's stream)
// fill the events page and its counters.
type recordFeed struct {
	h        *Handler
	mu       sync.Mutex
	initial  []taskSummary // the records before the watch's Synced marker
	seen     map[kvledger.IdempotencyKey]bool
	syncing  bool
	synced   chan struct{} // closed at the first Synced marker
	syncOnce sync.Once
	ended    chan struct{} // receives when the watch ended without Stop
	watch    *kvledger.RecordWatch
}

// startRecordFeed starts the record watch and waits, bounded by ctx,
// until the view holds every record.
func (h *Handler) startRecordFeed(ctx context.Context) error {
	f := &recordFeed{h: h, synced: make(chan struct{}), ended: make(chan struct{}, 1)}
	h.feed = f
	if err := f.start(); err != nil {
		return fmt.Errorf("dashboard: watch ledger %q: %w", h.cfg.Ledger, err)
	}
	h.wg.Go(f.keep)
	select {
	case <-f.synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("dashboard: read ledger %q: %w", h.cfg.Ledger, ctx.Err())
	}
}

func (f *recordFeed) start() error {
	f.mu.Lock()
	f.syncing, f.initial, f.seen = true, nil, make(map[kvledger.IdempotencyKey]bool)
	f.mu.Unlock()
	f.h.schedules.reset()
	f.h.pauses.reset()
	w, err := f.h.store.WatchRecordsAndControls(f.h.life, f.onChange, f.h.onSchedule, f.h.onPause)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.watch = w
	f.mu.Unlock()
	return nil
}

// keep runs until Close: it stops the watch then, and starts it again
// when it ended on its own (the connection or its consumer went away).
func (f *recordFeed) keep() {
	defer func() {
		f.mu.Lock()
		w := f.watch
		f.mu.Unlock()
		if w != nil {
			w.Stop()
		}
	}()
	for {
		select {
		case <-f.h.life.Done():
			return
		case <-f.ended:
		}
		l := rewatch.Start(f.h.life)
		l.Next() // the first try is the watch that ended: pause before the next
		for l.Next() {
			f.mu.Lock()
			old := f.watch
			f.mu.Unlock()
			old.Stop() // it ended; Stop only waits for its goroutine
			err := f.start()
			if err == nil {
				break
			}
			f.h.cfg.Logger.Warn("dashboard: watch ledger again", "ledger", f.h.cfg.Ledger, "err", err)
		}
		if f.h.life.Err() != nil {
			return
		}
	}
}

// onChange applies one change; the watch calls it from one goroutine.
func (f *recordFeed) onChange(c kvledger.Change) {
	h := f.h
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case errors.Is(c.Err, kvledger.ErrWatchEnded):
		h.cfg.Logger.Warn("dashboard: ledger watch ended; watching again", "ledger", h.cfg.Ledger)
		select {
		case f.ended <- struct{}{}:
		default:
		}
	case c.Resync:
		return // the catch-up's changes follow, each a change as any other
	case c.Synced:
		if !f.syncing {
			return
		}
		// The view keeps admission order: the watch delivers records in
		// the order of their last write.
		slices.SortStableFunc(f.initial, func(a, b taskSummary) int { return a.CreatedAt.Compare(b.CreatedAt) })
		for _, s := range f.initial {
			h.tasks.put(s)
		}
		// After a re-watch, a record the view holds that the store no
		// longer has went while the watch was down.
		h.tasks.retain(f.seen)
		// The schedules came before this marker: one held that this
		// watch did not deliver was removed while no watch ran.
		h.schedules.synced(h.tasks.scheduleNames())
		h.pauses.synced()
		f.syncing, f.initial, f.seen = false, nil, nil
		f.syncOnce.Do(func() { close(f.synced) })
	case c.Err != nil:
		// Not a record (an operator removes it with `natscoord ledger
		// rm --force`): the key is unknown to the view.
		h.cfg.Logger.Warn("dashboard: ledger holds a value that is not a record", "ledger", h.cfg.Ledger, "key", string(c.Key), "err", c.Err)
		if c.Key != "" && !f.syncing {
			h.tasks.remove(c.Key, c.Rev)
		}
	case f.syncing:
		if !c.Deleted {
			f.initial = append(f.initial, summarize(c.Record, h.cfg.KindOf(c.Record)))
			f.seen[c.Key] = true
		}
	case c.Deleted:
		if h.tasks.remove(c.Key, c.Rev) {
			h.broker.publish(push{Type: "ledger", Data: recordJSON(taskSummary{Key: c.Key, LastEvent: kvledger.DeletedEvent, Rev: c.Rev, UpdatedAt: h.cfg.Clock.Now()}, h.cfg.Clock.Now())})
		}
	default:
		s := summarize(c.Record, h.cfg.KindOf(c.Record))
		if !h.tasks.put(s) {
			return
		}
		h.broker.publish(push{Type: "ledger", Data: recordJSON(s, h.cfg.Clock.Now())})
	}
}
