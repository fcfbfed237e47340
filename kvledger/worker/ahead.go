package worker

import (
	"slices"
	"sync"
	"time"
)

// Claims ahead (Config.ClaimAhead). The dispatcher starts attempts while
// fewer than Concurrency+ClaimAhead hold a slot (Worker.busy), so up to
// ClaimAhead claims are taken while every handler runs. A claimed attempt
// then takes one of the Concurrency handler slots (Worker.inHandler) in
// the order of readyBefore, not in the order its claim's answer came
// back: a slot goes to the first waiting attempt (Worker.ahead) only
// while no attempt before it is still claiming (Worker.claiming), and the
// producer claims a task before it hands the slot (produceLocked), so a
// higher task that became ready meanwhile takes the slot before the
// tasks claimed ahead of it. The waiting attempt keeps its goroutine (at
// most ClaimAhead of them, whatever the number of claims in the ledger)
// and its claim under the worker's lease; Close gives every waiting
// claim back at once (releaseAhead), and a cancellation or the loss of
// the worker's lease ends the wait through the handler's context, which
// exists from the claim on.

// enterHandler takes a handler slot for r, claimed, waiting for its turn
// when all are busy or an attempt before it is still claiming. It returns
// false when r may not run: the worker drains, or r's context ended while
// it waited (cancelled, lost, released).
func (w *Worker) enterHandler(r *run) bool {
	w.mu.Lock()
	w.claimedLocked(r)
	if w.draining || r.cause != nil {
		w.grantLocked() // r no longer holds back the attempts after it
		w.mu.Unlock()
		return false
	}
	w.ahead = append(w.ahead, r)
	if w.grantLocked(); r.handling {
		w.mu.Unlock()
		return true
	}
	r.grant = make(chan struct{})
	hctx := r.hctx
	w.mu.Unlock()
	select {
	case <-r.grant:
		return true
	case <-hctx.Done():
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if r.handling { // granted as the context ended: pass the slot on
		w.leaveHandlerLocked(r)
	} else if i := slices.Index(w.ahead, r); i >= 0 {
		w.ahead = slices.Delete(w.ahead, i, i+1)
	}
	w.grantLocked()
	return false
}

// claimedLocked takes r out of the attempts still claiming.
func (w *Worker) claimedLocked(r *run) {
	if i := slices.Index(w.claiming, r); i >= 0 {
		w.claiming = slices.Delete(w.claiming, i, i+1)
	}
}

// leaveHandlerLocked gives r's handler slot back; the producer hands it
// on (grantLocked).
func (w *Worker) leaveHandlerLocked(r *run) {
	if !r.handling {
		return
	}
	r.handling = false
	w.inHandler--
}

// orderHold is how long a claim still on its way holds a handler slot
// for itself against claimed tasks after it (grantLocked): a claim takes
// a millisecond or two, but one that meets a stream leader moving waits
// for its answer up to OpTimeout, and must not stop every handler
// meanwhile.
const orderHold = 500 * time.Millisecond

// grantLocked hands free handler slots to the waiting attempts in order
// (readyBefore): the first waiting one gets a slot unless an attempt
// before it is still claiming, for which the slot is kept, for up to
// orderHold from that claim's start (a timer then wakes the producer).
func (w *Worker) grantLocked() {
	var now time.Time
	for !w.draining && w.inHandler < w.cfg.Concurrency && len(w.ahead) > 0 {
		best := 0
		for i, a := range w.ahead {
			if readyBefore(a.order, w.ahead[best].order) {
				best = i
			}
		}
		next := w.ahead[best]
		for _, c := range w.claiming {
			if !readyBefore(c.order, next.order) {
				continue
			}
			if now.IsZero() {
				now = w.now()
			}
			if until := c.since.Add(orderHold); now.Before(until) {
				if !c.held {
					c.held = true
					w.ix.addTimer(until, c.key)
					w.poke()
				}
				return
			}
		}
		w.ahead = slices.Delete(w.ahead, best, best+1)
		next.handling = true
		w.inHandler++
		if next.grant != nil {
			close(next.grant)
		}
	}
}

// waitsLocked reports whether a claim of it now would wait for a handler
// slot: every slot is taken, or will be by the attempts before it.
func (w *Worker) waitsLocked(it readyItem) bool {
	if w.busy < w.cfg.Concurrency {
		return false
	}
	n := w.inHandler
	for _, rs := range [2][]*run{w.claiming, w.ahead} {
		for _, r := range rs {
			if readyBefore(r.order, it) {
				n++
			}
		}
	}
	return n >= w.cfg.Concurrency
}

// releaseAhead gives back, at once, every claim taken ahead and still
// waiting for a handler slot, when Close begins (draining is set, so no
// slot is granted any more): pending again, the attempt not counted, so
// other workers start those tasks without waiting for this worker's
// handlers or its lease.
func (w *Worker) releaseAhead() {
	w.mu.Lock()
	rs := w.ahead
	w.ahead = nil
	w.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(func() { w.release(r) })
	}
	wg.Wait()
}
