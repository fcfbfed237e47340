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
		if !w.draining {
			w.startReadyLocked(now)
		}
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

// startReadyLocked starts ready tasks, kinds taken in turn and each
// kind's highest priority first, until the worker's or every kind's
// limit is reached or nothing is ready. A task whose group is full
// (Config.GroupLimits) is parked: the tasks behind it go on, and it goes
// back to its place when a slot frees up (unparkLocked).
func (w *Worker) startReadyLocked(now time.Time) {
	for w.canStartLocked() {
		progress := w.unparkLocked()
		for kind, q := range w.ix.ready {
			if n, ok := w.cfg.KindConcurrency[kind]; ok && w.perKind[kind] >= n {
				continue
			}
			it, ok := q.pop()
			if !ok {
				delete(w.ix.ready, kind)
				continue
			}
			k := it.key
			if w.lastAttemptLocked(k) {
				// Back to its place; no more claims ahead until a
				// handler slot is free for it, so that the tasks
				// behind it do not keep the window full.
				w.ix.requeue(kind, it)
				return
			}
			progress = true
			if e := w.ix.recs[k]; e != nil && e.group != "" && w.running[k] == nil {
				if g := w.ix.groups[e.group]; g != nil && w.ix.room(g) <= 0 {
					g.parked.Push(parkedItem{kind: kind, it: it})
					continue // still queued
				}
			}
			delete(w.ix.queued, k)
			if w.running[k] != nil {
				continue
			}
			if r, _ := w.ix.judge(k, now); r != candidate {
				w.considerLocked(k, now)
				continue
			}
			w.startLocked(k, kind)
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

// lastAttemptLocked reports whether k's claim now would be a claim ahead
// (every handler slot taken or being claimed for) that uses the task's
// last allowed attempt. Such a task is not claimed ahead: a claim ahead
// lost with the worker (a crash, its lease ended) counts its attempt
// although its handler never ran, and that must not fail a task. It waits
// in the ready queue for a handler slot instead, and no task is claimed
// ahead meanwhile.
func (w *Worker) lastAttemptLocked(k kvledger.IdempotencyKey) bool {
	if w.busy < w.cfg.Concurrency {
		return false
	}
	e := w.ix.recs[k]
	if e == nil || e.rec == nil || e.rec.Status != kvledger.StatusPending {
		return false
	}
	claimed := *e.rec
	claimed.Attempts++ // as the claim would count it
	return attemptsUsed(claimed, w.cfg.MaxAttempts)
}
