package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/natscoord/natscoord/internal/retry"
	"github.com/natscoord/natscoord/kvledger"
)

// `ledger wait` watches the records of its keys itself, rather than
// through Ledger.WaitFinal, for two things WaitFinal leaves to its
// caller: a key without a record is waited for there (it may be admitted
// later), so a record deleted during the wait would be waited for for
// ever, while here it ends the wait; and a watch that ends is an error
// there, while here it is watched again. A reconnect does not end the
// watch (the store's record hub replaces its consumer as soon as the
// connection is back); a watch ends when that replacement could not be
// made, or the connection closed.

// taskWait is what the watches of one `ledger wait` have learnt; it
// outlives each watch.
type taskWait struct {
	keys   []kvledger.IdempotencyKey
	bucket string
	// load reads a key's record, bounded: a key a watch did not deliver
	// before its end-of-initial-values marker is read before it is called
	// missing (a record written while the watch starts may be delivered
	// only after the marker).
	load func(kvledger.IdempotencyKey) (kvledger.TaskState, bool, error)

	mu sync.Mutex
	// last is the latest record of each key seen by any watch.
	last map[kvledger.IdempotencyKey]kvledger.TaskState
	// existed is set once a watch has seen every key's record: from then
	// on, a key without a record was deleted, not misspelt.
	existed bool
}

// taskDeletedError: a key's record was deleted before it was final.
type taskDeletedError struct {
	bucket string
	key    kvledger.IdempotencyKey
}

func (e taskDeletedError) Error() string {
	return fmt.Sprintf("ledger wait: task %q was deleted from %s before it was final", string(e.key), e.bucket)
}

// finalRecords returns the final records of the keys.
func (w *taskWait) finalRecords() map[kvledger.IdempotencyKey]kvledger.TaskState {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[kvledger.IdempotencyKey]kvledger.TaskState, len(w.keys))
	for k, t := range w.last {
		if kvledger.IsFinal(t.Status) {
			out[k] = t
		}
	}
	return out
}

// gone handles a key that has no record (now): a typo before any watch
// saw it, else a deletion, which ends the wait unless the wait saw the
// key final (Ledger.Delete removes final records; how it ended stands).
// A record whose final value this wait never saw (a watch starting while
// the record changes may deliver only a later value, here the deletion)
// is reported deleted. It returns the error that ends the wait, or nil.
func (w *taskWait) gone(k kvledger.IdempotencyKey) error {
	if !w.existed {
		return errNoTask(w.bucket, string(k))
	}
	if t, ok := w.last[k]; ok && kvledger.IsFinal(t.Status) {
		return nil
	}
	return taskDeletedError{bucket: w.bucket, key: k}
}

// allFinal reports whether every key's latest record is final.
func (w *taskWait) allFinal() bool {
	for _, k := range w.keys {
		if t, ok := w.last[k]; !ok || !kvledger.IsFinal(t.Status) {
			return false
		}
	}
	return true
}

// watchOnce runs one watch of the keys until they are all final (nil),
// a key is gone (see gone), the watch ends (kvledger.ErrWatchEnded) or
// ctx ends. A reconnect does not end it: the store's record watch (a
// kvx hub) replaces its consumer as soon as the connection is back.
func (w *taskWait) watchOnce(ctx context.Context, rw kvledger.RecordWatcher) error {
	want := make(map[kvledger.IdempotencyKey]bool, len(w.keys))
	for _, k := range w.keys {
		want[k] = true
	}
	present := map[kvledger.IdempotencyKey]bool{} // has a record in this watch
	synced := false
	done := make(chan struct{})
	var result error
	finish := func(err error) {
		select {
		case <-done:
		default:
			result = err
			close(done)
		}
	}
	watch, err := rw.WatchRecords(ctx, func(c kvledger.Change) {
		w.mu.Lock()
		defer w.mu.Unlock()
		switch {
		case errors.Is(c.Err, kvledger.ErrWatchEnded):
			finish(c.Err)
			return
		case c.Synced:
			synced = true
			for _, k := range w.keys {
				if present[k] {
					continue
				}
				rec, found, err := w.load(k)
				switch {
				case err != nil:
					finish(err)
					return
				case found:
					present[k] = true
					w.last[k] = rec
					continue
				}
				if err := w.gone(k); err != nil {
					finish(err)
					return
				}
			}
			w.existed = true
		case !want[c.Key]:
			return
		case c.Deleted:
			present[c.Key] = false
			if synced {
				if err := w.gone(c.Key); err != nil {
					finish(err)
					return
				}
			}
		case c.Err != nil:
			present[c.Key] = true // a corrupt record: there, not final
		default:
			present[c.Key] = true
			w.last[c.Key] = c.Record
		}
		if synced && w.allFinal() {
			finish(nil)
		}
	}, w.keys...)
	if err != nil {
		return err
	}
	defer watch.Stop()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	watch.Stop() // fn has returned for the last time: result is settled
	w.mu.Lock()
	defer w.mu.Unlock()
	return result
}

// watchUntilFinal watches the keys until they are final, watching again
// when a watch ends (its hub could not replace it after a reconnect) or
// cannot start while the server comes back; it gives up on a watch that
// cannot start for --timeout while connected.
func (a *app) watchUntilFinal(ctx context.Context, nc *nats.Conn, rw kvledger.RecordWatcher, w *taskWait) error {
	var failingSince time.Time
	l := rewatchWait.Start(ctx)
	for l.Next() {
		err := w.watchOnce(ctx, rw)
		if err == nil || ctx.Err() != nil {
			return err
		}
		var gone taskDeletedError
		if errors.As(err, &gone) || !w.existed && !errors.Is(err, kvledger.ErrWatchEnded) {
			return err // a deletion, a missing key, or a first watch that failed
		}
		if !errors.Is(err, kvledger.ErrWatchEnded) {
			if failingSince.IsZero() {
				failingSince = wall.Now()
			} else if wall.Now().Sub(failingSince) > a.conn.timeout {
				return err
			}
		} else {
			failingSince = time.Time{}
		}
		if err := awaitConnected(ctx, nc); err != nil {
			return err
		}
	}
	return l.Err() // ctx ended during the pause
}

// rewatchWait is watchUntilFinal's retry policy (the one retry
// primitive): a restarted server may accept the connection a moment
// before its JetStream does, so it pauses 250 ms before watching again.
// Its ceiling is watchUntilFinal's: --timeout of failing while connected,
// or the command's end.
var rewatchWait = retry.Policy{Pause: 250 * time.Millisecond, MaxPause: 250 * time.Millisecond}

// awaitConnected returns once nc is connected, or an error when it was
// closed or ctx ended first.
func awaitConnected(ctx context.Context, nc *nats.Conn) error {
	ch := nc.StatusChanged(nats.CONNECTED, nats.CLOSED)
	defer nc.RemoveStatusListener(ch)
	for {
		switch {
		case nc.IsConnected():
			return nil
		case nc.IsClosed():
			return errors.New("ledger wait: the connection to the server was closed")
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
