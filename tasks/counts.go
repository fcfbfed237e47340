package tasks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/kvledger"
)

// counter keeps a kvledger.Tally current from one record watch, started
// on first use and stopped by Close.
type counter struct {
	mu      sync.Mutex // serializes starts and stops
	stopped bool       // set by stop: no watch starts after it
	watch   *kvledger.RecordWatch
	tally   *kvledger.Tally
	ended   atomic.Bool // the watch ended by itself: the next call starts another
}

// Counts returns how many tasks the ledger holds, by phase and kind. The
// first call starts a watch of the ledger (one read of every record),
// which keeps a kvledger.Tally current until Close; later calls read the
// tally and send nothing. ctx bounds the first call's wait for the watch.
func (c *Client) Counts(ctx context.Context) (kvledger.Counts, error) {
	if err := c.writing(); err != nil {
		return kvledger.Counts{}, err
	}
	k := &c.counter
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		// Close ran between the check above and this lock.
		return kvledger.Counts{}, ErrClosed
	}
	if k.watch != nil && k.ended.Load() {
		k.watch.Stop()
		k.watch = nil
	}
	if k.watch == nil {
		if err := k.start(ctx, c.store, c.cfg.Clock); err != nil {
			return kvledger.Counts{}, err
		}
	}
	return k.tally.Counts(c.cfg.Clock.Now()), nil
}

// start watches the ledger and returns once the watch has delivered every
// record.
func (k *counter) start(ctx context.Context, rw kvledger.RecordWatcher, clk clock.Clock) error {
	t := kvledger.NewTally()
	synced := make(chan struct{})
	k.ended.Store(false)
	w, err := rw.WatchRecords(ctx, func(ch kvledger.Change) {
		switch {
		case errors.Is(ch.Err, kvledger.ErrWatchEnded):
			k.ended.Store(true)
		case ch.Synced:
			select {
			case <-synced:
			default:
				close(synced)
			}
		default:
			t.Apply(ch, clk.Now())
		}
	})
	if err != nil {
		return fmt.Errorf("tasks: counting: %w", err)
	}
	select {
	case <-synced:
		k.watch, k.tally = w, t
		return nil
	case <-ctx.Done():
		w.Stop()
		return fmt.Errorf("tasks: counting: %w", context.Cause(ctx))
	}
}

// stop ends the watch, if any.
func (k *counter) stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopped = true
	if k.watch != nil {
		k.watch.Stop()
		k.watch = nil
	}
}
