package worker

import (
	"time"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/kvledger"
)

// dispatch is the worker's one loop: woken by the watches (a task became
// ready) or by its one timer (the earliest RunAt or retry), it starts as
// many ready tasks as the concurrency limits allow. With nothing ready
// and no RunAt ahead it sleeps without a timer.
func (w *Worker) dispatch() {
	defer w.wg.Done()
	t := clock.NewTimer(w.cfg.Clock) // RunAt and retries are due on the worker's Clock
	for {
		w.mu.Lock()
		now := w.now()
		w.ix.dueTimers(now, func(k kvledger.IdempotencyKey) { w.considerLocked(k, now) })
		w.produceLocked(now)
		next, armed := w.ix.nextTimer()
		w.mu.Unlock()
		t.Stop()
		var tc <-chan struct{}
		if armed {
			t.Reset(max(next.Sub(now), time.Millisecond))
			tc = t.C
		}
		select {
		case <-w.ctx.Done():
			t.Stop()
			return
		case <-w.wake:
		case <-tc:
		}
	}
}

// produceLocked is the producer, the one place that decides what starts
// next: it claims ready tasks (startReadyLocked), then hands the free
// handler slots to the claimed ones (grantLocked), both in the order of
// readyBefore. Nothing is claimed during a drain, or during the pause
// after a claim failed (claimRetry).
func (w *Worker) produceLocked(now time.Time) {
	if !w.draining && !now.Before(w.claimPause) {
		w.startReadyLocked(now)
	}
	w.grantLocked()
}

// startReadyLocked starts ready tasks, kinds taken in turn and each
// kind's first in order (readyBefore), until the worker's or every kind's
// limit is reached or nothing is ready. A task whose group is full
// (Config.GroupLimits), or under a rate limit with no token free
// (Config.RateLimits), is parked: the tasks behind it go on, and it goes
// back to its place when a slot or token frees up (unparkLocked).
func (w *Worker) startReadyLocked(now time.Time) {
	for w.canStartLocked() {
		progress := w.unparkLocked()
		for kind, q := range w.ix.ready {
			if n, ok := w.cfg.KindConcurrency[kind]; ok && w.perKind[kind] >= n {
				continue
			}
			if w.pausedLocked(kind) {
				continue // its tasks wait in their places (pause.go)
			}
			it, ok := q.pop()
			if !ok {
				delete(w.ix.ready, kind)
				continue
			}
			k := it.key
			if w.lastAttemptLocked(it) {
				// Back to its place; no more claims ahead until a
				// handler slot is free for it, so that the tasks
				// behind it do not keep the window full.
				w.ix.requeue(kind, it)
				return
			}
			progress = true
			if g := w.fullLimitLocked(kind, it); g != nil {
				g.parked.Push(parkedItem{kind: kind, it: it})
				continue // still queued
			}
			if w.rateAheadLocked(kind, it) {
				w.ix.requeue(kind, it) // as for a last attempt, above
				return
			}
			delete(w.ix.queued, k)
			if w.running[k] != nil {
				continue
			}
			if r, _ := w.ix.judge(k, now); r != candidate {
				w.considerLocked(k, now)
				continue
			}
			w.startLocked(it, kind)
			if !w.canStartLocked() {
				return
			}
		}
		if !progress {
			return
		}
	}
}

// canStartLocked reports whether another attempt may start: a slot is
// free (Concurrency+ClaimAhead bounds the attempts claiming, claimed
// ahead or in their handler), and fewer than Concurrency attempts are
// still recording their outcome after their handler returned, which
// bounds the work a slow server can pile up.
func (w *Worker) canStartLocked() bool {
	return w.busy < w.cfg.Concurrency+w.cfg.ClaimAhead && len(w.running) < 2*w.cfg.Concurrency+w.cfg.ClaimAhead
}

// lastAttemptLocked reports whether it's claim now would be a claim ahead
// (it would wait for a handler slot: waitsLocked) that uses the task's
// last allowed attempt. Such a task is not claimed ahead: a claim ahead
// lost with the worker (a crash, its lease ended) counts its attempt
// although its handler never ran, and that must not fail a task. It waits
// in the ready queue, in its place, until a handler slot would be its at
// once, and no task is claimed ahead meanwhile, so none behind it starts
// before it.
func (w *Worker) lastAttemptLocked(it readyItem) bool {
	if w.busy < w.cfg.Concurrency {
		return false
	}
	e := w.ix.recs[it.key]
	if e == nil || e.rec == nil || e.rec.Status != kvledger.StatusPending {
		return false
	}
	claimed := *e.rec
	claimed.Attempts++ // as the claim would count it
	return attemptsUsed(claimed, w.cfg.MaxAttempts) && w.waitsLocked(it)
}

// pickupBound is how long a worker stays idle with a task ready after the
// ledger's stream leader moved or restarted (doc.go, "Failure modes"): a
// claim in flight across the move may go unanswered for its whole
// opTimeout, then the claims pause (claimRetry, at most 1 s); the claims
// after it are held back for orderHold at most.
func pickupBound(opTimeout time.Duration) time.Duration {
	return opTimeout + claimRetry.MaxPause + orderHold
}
