package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/retry"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// onRecord applies one change from the record watch (its goroutine).
func (w *Worker) onRecord(c kvledger.Change, synced chan struct{}) {
	if errors.Is(c.Err, kvledger.ErrWatchEnded) {
		w.watchEnded("record", c.Err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if c.Synced {
		if !w.ix.recSynced {
			w.ix.recSynced = true
			close(synced)
			w.considerAllLocked()
		}
		return
	}
	if c.Key == "" {
		return
	}
	_, handled := w.handlers[c.Record.Kind]
	e := w.ix.apply(&c, handled)
	r := w.running[c.Key]
	if r != nil {
		r.observeLocked(c)
	}
	if !w.ix.recSynced || e == nil {
		return // considerAllLocked runs at the end of the initial values
	}
	now := w.now()
	if r == nil && handled {
		w.fileLocked(c.Key, e, now) // considerLocked, with what is known here
	}
	if e.status == kvledger.StatusPending || e.status == kvledger.StatusClaimed {
		return
	}
	// Final: its waiting dependents are ready (completed) or due to be
	// blocked (failed, blocked: see waitBlocker).
	deps := w.ix.waiting[c.Key]
	delete(w.ix.waiting, c.Key)
	for d := range deps {
		w.considerLocked(d, now)
	}
}

// leaseFeedLimit is how many lease changes the worker's lease feed may
// queue before it is caught up from the manager's view (kvlease.Feed).
const leaseFeedLimit = 1 << 12

// watchLeases starts the worker's feed of this ledger's lease keys in
// the lease bucket (claimants' leases "<prefix>w.<token>": workers', and
// those of kvledger's Claim with a lease taker; and per-record leases
// "<prefix><key token>"), from the lease manager's one watch of the
// bucket (kvlease.View, Feed); synced is closed once it has delivered the
// current leases. Lease keys are this package's own namespace of the
// lease bucket, read through kvlease's view.
func (w *Worker) watchLeases(ctx context.Context, synced chan struct{}) error {
	v, err := w.leases.View(strings.TrimSuffix(w.prefix, "."))
	if err != nil {
		return fmt.Errorf("worker: lease view: %w", err)
	}
	f, err := v.Feed(ctx, nil, leaseFeedLimit)
	if err != nil {
		return fmt.Errorf("worker: watch leases: %w", err)
	}
	done := make(chan struct{})
	w.mu.Lock()
	w.leaseStop, w.leaseDone = f.Close, done // Close ends Each (nil)
	w.mu.Unlock()
	go func() {
		defer close(done)
		defer f.Close()
		err := f.Each(nil, func(it kvlease.FeedItem) bool {
			w.onLeaseItem(it, synced)
			return true
		})
		if err != nil {
			w.watchEnded("lease", err)
		}
	}()
	return nil
}

// onLeaseItem applies one item of the lease feed.
func (w *Worker) onLeaseItem(it kvlease.FeedItem, synced chan struct{}) {
	switch {
	case it.Resync:
		return // a catch-up: its changes follow as any others
	case it.Resumed:
		w.recheckLeases()
		return
	case it.Synced:
		w.mu.Lock()
		if !w.ix.leaseSynced {
			w.ix.leaseSynced = true
			close(synced)
			w.considerAllLocked()
		}
		w.mu.Unlock()
		return
	}
	w.leaseChange(it.Key, it.Live(), it.Revision)
}

// leaseReread is recheckLeases' policy for one lease's read: a
// restarted server may take a moment before its JetStream answers. Each
// read is bounded by OpTimeout; the pauses end with the worker's Close.
var leaseReread = retry.Policy{Tries: 5, Pause: 200 * time.Millisecond, MaxPause: time.Second}

// recheckLeases reads again, from the lease bucket's stream leader
// (kvledger.LeaseEnded), every lease the index holds live, once the lease
// watch has resumed after its connection came back (kvlease.FeedItem
// Resumed). The server keeps a lease's expiry marker for a minute
// (kvlease's LimitMarkerTTL): after a longer outage the resumed watch
// never delivers that expiry, and without this read the dead worker's
// claims would look held for ever. A lease read as ended is applied as
// the watch's expiry would have been (leaseChange), one revision above
// what the index holds, so any later write of the key still counts; its
// claims are taken over at once. It runs on the feed's goroutine, so the
// changes the resumed watch delivers are applied after it, in order.
func (w *Worker) recheckLeases() {
	w.mu.Lock()
	live := make(map[string]uint64)
	for k, s := range w.ix.leases {
		if s.live {
			live[k] = s.rev
		}
	}
	w.mu.Unlock()
	for key, rev := range live {
		var ended bool
		err := leaseReread.Do(w.ctx, func(context.Context) error {
			octx, cancel := w.opCtx()
			defer cancel()
			var err error
			ended, _, err = kvledger.LeaseEnded(octx, w.leases, key)
			return err
		})
		if err != nil {
			w.cfg.Logger.Warn("worker: reading a lease again after the lease watch resumed", "lease", key, "err", err)
			continue
		}
		if ended {
			w.leaseChange(key, false, rev+1)
		}
	}
}

// leaseChange applies one change of a key of the lease bucket, as the
// lease feed delivers it: a group's slot, a rate limit's token, a claimant's lease or a
// per-record lease; any other key is not one this package writes.
func (w *Worker) leaseChange(key string, live bool, rev uint64) {
	tok, ok := strings.CutPrefix(key, w.prefix)
	if !ok {
		return
	}
	if rest, ok := strings.CutPrefix(tok, groupInfix); ok {
		w.onSlot(key, rest, live, rev)
		return
	}
	if rest, ok := strings.CutPrefix(tok, rateInfix); ok {
		w.onToken(key, rest, live, rev)
		return
	}
	if strings.HasPrefix(tok, kvledger.ClaimLeaseInfix) {
		w.onLease(key, "", false, live, rev)
		return
	}
	k, err := kvx.DecodeToken(tok)
	if err != nil || strings.Contains(tok, ".") {
		return // not a key this package writes
	}
	w.onLease(key, kvledger.IdempotencyKey(k), true, live, rev)
}

// onLease applies one change of a lease key; perRecord says it is the
// per-record lease of k.
func (w *Worker) onLease(key string, k kvledger.IdempotencyKey, perRecord, live bool, rev uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ix.seeLease(key, live, rev) || live || !w.ix.leaseSynced || !w.ix.recSynced {
		return
	}
	w.leaseEndedLocked(key)
	if perRecord {
		w.considerLocked(k, w.now())
	}
}

// leaseEndedLocked files again every claimed record that names lease,
// which has ended: each is now a takeover candidate.
func (w *Worker) leaseEndedLocked(lease string) {
	now := w.now()
	for k := range w.ix.byLease[lease] {
		w.considerLocked(k, now)
	}
}

// watchEnded records a watch that ended by itself (its bucket or stream
// deleted: the client gives up recreating its consumer). The worker
// stops claiming, since it would no longer see changes, and closes
// itself: running handlers finish within DrainTimeout, Done closes, and
// Run and Close return the error. A worker that went on looking alive
// while claiming nothing would hide the fault.
func (w *Worker) watchEnded(what string, err error) {
	w.mu.Lock()
	first := w.fatal == nil && !w.closed
	if first {
		w.fatal = fmt.Errorf("worker: %s watch ended: %w", what, err)
		w.cfg.Logger.Error("worker: watch ended; the worker stops", "watch", what, "err", err)
		w.draining = true
	}
	w.mu.Unlock()
	if first {
		// Not from this goroutine: Close stops the watches and waits for
		// the goroutine that delivered this end. The goroutine ends with
		// Close, whose drain DrainTimeout bounds and whose remaining
		// waits this context does.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), max(w.cfg.DrainTimeout, 0)+4*w.cfg.OpTimeout)
			defer cancel()
			_ = w.Close(ctx)
		}()
	}
}

// considerAllLocked judges every record once, when both watches have
// delivered their initial values. Each ready one is placed by its own
// revisions (readyRev), as if it had been seen becoming ready.
func (w *Worker) considerAllLocked() {
	if !w.ix.recSynced || !w.ix.leaseSynced {
		return
	}
	now := w.now()
	w.ix.backlog = true
	for k := range w.ix.recs {
		w.considerLocked(k, now)
	}
	w.ix.backlog = false
}

// considerLocked files k where it belongs: the ready queue, a timer, or
// the waiting set of its first incomplete need.
func (w *Worker) considerLocked(k kvledger.IdempotencyKey, now time.Time) {
	e := w.ix.recs[k]
	if e == nil || w.running[k] != nil {
		return
	}
	if _, ok := w.handlers[e.kind]; !ok {
		return
	}
	w.fileLocked(k, e, now)
}

// fileLocked is considerLocked of k's entry e, of a handled kind, that
// no attempt of this worker is running.
func (w *Worker) fileLocked(k kvledger.IdempotencyKey, e *entry, now time.Time) {
	r, need := w.ix.judgeEntry(k, e, now)
	switch r {
	case waitTime:
		w.ix.addTimer(e.runAt, k)
		w.poke()
	case waitNeed:
		w.ix.wait(need, k)
	case waitBlocker:
		// The write that failed the need blocks k in its walk of the
		// dependents. A walk cut short (an error after the failure
		// was written) would leave k pending for ever, waiting on a
		// need that never completes: after ClaimTTL, claim it
		// instead; the claim finds the failed need and blocks it.
		if e.blockDue.IsZero() {
			e.blockDue = now.Add(w.cfg.ClaimTTL)
			w.ix.addTimer(e.blockDue, k)
			w.poke()
		}
	case candidate:
		w.ix.enqueue(k, e)
		w.poke()
	}
}
