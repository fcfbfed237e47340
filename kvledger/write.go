package kvledger

import (
	"context"
	"fmt"
	"sync"

	"github.com/natscoord/natscoord/events"
)

// write stores next over cur (or inserts it when !found) and publishes the
// event the new record names. It returns the record as stored and false
// when the compare-and-swap lost. With async the new record's event is
// sent without waiting for the bus (when it is an events.AsyncPublisher):
// the next write of the key through this Ledger waits for it first (step
// 1 below), so per-key order holds, and the write returns a round trip
// sooner. An event that never gets acknowledged is recovered as after a
// crash.
//
// Event delivery is built so that no event is lost and none is delivered
// twice within the bus's de-duplication window, in per-key write order,
// even when a writer dies between its write and its publish:
//
//  1. Before overwriting cur, the event of cur is published again unless
//     this Ledger knows it published it. Its id (source, key, revision)
//     is the one the original publish used, so the bus drops it when it
//     was delivered; when it was not (the writer died), it is delivered
//     now, before the event of the write that follows it.
//  2. After the write, its own event is published. A failure here does not
//     undo the write (the write is the commit point): it is reported to
//     the publish-error handler and recovered by step 1 of the next write,
//     or by a relay (StartRelay) for the last write of a key.
func (l *Ledger) write(ctx context.Context, cur TaskState, found bool, next TaskState, async bool) (TaskState, bool, error) {
	var old TaskState
	if found {
		old = cur
		if err := l.flushPrevious(ctx, cur); err != nil {
			return TaskState{}, false, err
		}
	}
	rec, ok, err := l.cas(ctx, next.Key, old, next)
	if err != nil || !ok {
		if l.remember {
			l.claims.forget(next.Key)
		}
		return rec, ok, err
	}
	return l.written(ctx, rec, async)
}

// insert is write for a key believed absent: insert-if-absent, then the
// event. When the insert loses and the store reported the record it found
// (Inserter), that record comes back with found true; otherwise the
// caller must load the key. Nothing is overwritten, so there is no
// previous event to flush.
func (l *Ledger) insert(ctx context.Context, next TaskState) (rec TaskState, ok bool, cur TaskState, found bool, err error) {
	if ins, isIns := l.store.(Inserter); isIns {
		rec, ok, cur, found, err = ins.Insert(ctx, next.Key, next)
	} else {
		rec, ok, err = l.cas(ctx, next.Key, TaskState{}, next)
	}
	if err != nil || !ok {
		return rec, ok, cur, found, err
	}
	rec, ok, err = l.written(ctx, rec, false)
	return rec, ok, TaskState{}, false, err
}

// written runs after a successful write: the test hook, then the event
// (async as for write).
func (l *Ledger) written(ctx context.Context, rec TaskState, async bool) (TaskState, bool, error) {
	if err := l.wrote(rec); err != nil {
		return rec, true, err
	}
	if ap, ok := l.bus.(events.AsyncPublisher); async && ok && rec.LastEvent != "" {
		l.pub.sent(rec.Key, rec.Rev, ap.PublishAsync(l.eventOf(rec)))
		return rec, true, nil
	}
	l.publish(ctx, rec)
	return rec, true, nil
}

// wrote is what follows every successful write before its event: the
// claim cache learns the record, and the test hook may abort there.
func (l *Ledger) wrote(rec TaskState) error {
	if l.remember {
		l.claims.note(rec)
	}
	if l.afterWrite != nil {
		return l.afterWrite(rec.Key, rec)
	}
	return nil
}

// writtenBatch is written for the records of one batch insert (distinct
// keys, each its first write): their events are sent together without
// waiting and then waited for, all within one operation timeout, so a
// batch of n costs about one round trip of events instead of n. It
// returns, like written, once every event was acknowledged or reported to
// the publish-error handler; n counts the records handled before a test
// hook's error.
func (l *Ledger) writtenBatch(ctx context.Context, recs []TaskState) (n int, err error) {
	ap, async := l.bus.(events.AsyncPublisher)
	if !async {
		for i, rec := range recs {
			if _, _, err := l.written(ctx, rec, false); err != nil {
				return i + 1, err
			}
		}
		return len(recs), nil
	}
	waits := make([]func(context.Context) error, 0, len(recs))
	defer func() { l.awaitEvents(ctx, recs[:len(waits)], waits) }()
	for i, rec := range recs {
		if err := l.wrote(rec); err != nil {
			return i + 1, err
		}
		if rec.LastEvent == "" {
			waits = append(waits, nil)
			continue
		}
		waits = append(waits, ap.PublishAsync(l.eventOf(rec)))
	}
	return len(recs), nil
}

// awaitEvents waits for the events sent for recs (nil: none was sent) and
// settles each, as publish does for one. They were sent together, so one
// operation timeout bounds the wait for all of them.
func (l *Ledger) awaitEvents(ctx context.Context, recs []TaskState, waits []func(context.Context) error) {
	pctx, cancel := l.ops.Bound(ctx)
	defer cancel()
	for i, wait := range waits {
		if wait == nil {
			continue
		}
		l.settled(recs[i], wait(pctx))
	}
}

func (l *Ledger) cas(ctx context.Context, key IdempotencyKey, old, next TaskState) (TaskState, bool, error) {
	if l.swap != nil {
		return l.swap.Swap(ctx, key, old, next)
	}
	ok, err := l.store.CompareAndSwap(ctx, key, old, next)
	if err != nil || !ok {
		return TaskState{}, ok, err
	}
	next.Rev = 0
	if !isZeroOld(old) {
		next.Rev = old.Rev + 1
	}
	return next, true, nil
}

// flushPrevious re-publishes the event of the record about to be
// overwritten, unless it carries none or this Ledger published it. When
// that publish fails the write is refused (ErrEventsUnavailable) and
// nothing is written: per-key event order is kept over the availability
// of the ledger (see "Events and availability" in doc.go).
func (l *Ledger) flushPrevious(ctx context.Context, cur TaskState) error {
	if l.bus == nil || cur.LastEvent == "" || l.pub.has(cur.Key, cur.Rev) {
		return nil
	}
	pctx, cancel := l.ops.Bound(ctx)
	var err error
	if wait := l.pub.inFlight(cur.Key, cur.Rev); wait != nil {
		err = wait(pctx) // sent by this Ledger without waiting: wait now
	} else {
		err = l.bus.Publish(pctx, l.eventOf(cur))
	}
	cancel()
	if err != nil {
		return fmt.Errorf("%w: publish pending event of %q revision %d: %w", ErrEventsUnavailable, string(cur.Key), cur.Rev, err)
	}
	l.pub.add(cur.Key, cur.Rev)
	return nil
}

// PublishStored makes sure the event of rec, a record as stored (from a
// RecordWatcher), has been published before rec is overwritten: unless
// this Ledger knows it published it, it publishes it again under its
// original de-duplication id, which the bus drops when it was delivered.
// A write over rec through this Ledger then skips that publish. Calling
// it is never needed (every write does it first). It returns
// ErrEventsUnavailable when the publish fails.
func (l *Ledger) PublishStored(ctx context.Context, rec TaskState) error {
	if rec.Rev == 0 {
		return nil
	}
	return l.flushPrevious(ctx, rec)
}

// PrepublishStored is PublishStored without the wait: when the bus can
// publish asynchronously (events.AsyncPublisher) it sends rec's event and
// the next write over rec through this Ledger waits for that send
// instead of publishing it again; otherwise it does nothing and that
// write publishes the event itself. The runtime calls it before it
// prepares a claim (a read of the lease a claimed record names, or the
// worker's own lease acquisition), so that the publish overlaps that work
// at no goroutine of its own; a failure is the claim's
// (ErrEventsUnavailable, nothing written), as with PublishStored.
func (l *Ledger) PrepublishStored(rec TaskState) {
	if rec.Rev == 0 || l.bus == nil || rec.LastEvent == "" || l.pub.has(rec.Key, rec.Rev) {
		return
	}
	if ap, ok := l.bus.(events.AsyncPublisher); ok {
		l.pub.sent(rec.Key, rec.Rev, ap.PublishAsync(l.eventOf(rec)))
	}
}

func (l *Ledger) publish(ctx context.Context, rec TaskState) {
	if l.bus == nil || rec.LastEvent == "" {
		return
	}
	pctx, cancel := l.ops.Bound(ctx)
	err := l.bus.Publish(pctx, l.eventOf(rec))
	cancel()
	l.settled(rec, err)
}

// settled records how the publish of rec's event ended: remembered as
// published, or reported to the publish-error handler (the write stands;
// the event is recovered later).
func (l *Ledger) settled(rec TaskState, err error) {
	if err != nil {
		if h := l.onPublishError; h != nil {
			h(rec.Key, rec.Rev, err)
		}
		return
	}
	l.pub.add(rec.Key, rec.Rev)
}

// eventOf builds the event of a stored record. Fast path, pre-publish
// and relay all build it from the record alone, so they publish identical
// messages.
func (l *Ledger) eventOf(rec TaskState) events.Event {
	return EventOf(l.source, rec)
}

// EventOf returns the event a ledger with the given source publishes for
// the stored record rec.
func EventOf(source string, rec TaskState) events.Event {
	return events.Event{
		Name:      rec.LastEvent,
		Source:    source,
		Key:       string(rec.Key),
		Revision:  rec.Rev,
		Status:    string(rec.Status),
		Actor:     string(rec.UpdatedBy),
		Owner:     string(rec.Owner),
		Fence:     uint64(rec.Fence),
		BlockedBy: string(rec.BlockedBy),
		Time:      rec.UpdatedAt,
		Kind:      rec.Kind,
		Attempts:  rec.Attempts,
		LastError: rec.LastError,
		RunAt:     rec.RunAt,
	}
}

// WithPublishErrorHandler sets a function called when publishing the
// event of a completed write fails. The write stands; the event is
// recovered later (see StartRelay). Default: ignore.
func WithPublishErrorHandler(fn func(key IdempotencyKey, rev uint64, err error)) Option {
	return func(l *Ledger) error {
		l.onPublishError = fn
		return nil
	}
}

// published remembers, per key, the last revision whose event this
// Ledger published, so the common single-writer case publishes each event
// once, and the events it sent without waiting (write with async) until
// they are waited for. It is bounded: when full it forgets everything, which
// only costs a re-publish the bus de-duplicates.
type published struct {
	mu      sync.Mutex
	rev     map[IdempotencyKey]uint64
	pending map[IdempotencyKey]pendingEvent
}

// pendingEvent is an event sent without waiting for the bus.
type pendingEvent struct {
	rev  uint64
	wait func(context.Context) error
}

// sent records the in-flight event of key's revision rev.
func (p *published) sent(key IdempotencyKey, rev uint64, wait func(context.Context) error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil || len(p.pending) >= publishedMax {
		p.pending = make(map[IdempotencyKey]pendingEvent)
	}
	p.pending[key] = pendingEvent{rev: rev, wait: wait}
}

// inFlight takes the wait of key's in-flight event of revision rev, or
// returns nil.
func (p *published) inFlight(key IdempotencyKey, rev uint64) func(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.pending[key]
	if !ok {
		return nil
	}
	delete(p.pending, key)
	if e.rev != rev {
		return nil
	}
	return e.wait
}

const publishedMax = 1 << 14

func (p *published) has(key IdempotencyKey, rev uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.rev[key]
	return ok && r == rev
}

func (p *published) add(key IdempotencyKey, rev uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rev == nil || len(p.rev) >= publishedMax {
		p.rev = make(map[IdempotencyKey]uint64)
	}
	p.rev[key] = rev
}
