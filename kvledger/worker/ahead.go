package worker

import (
	"slices"
	"sync"
)

// Claims ahead (Config.ClaimAhead). The dispatcher starts attempts while
// fewer than Concurrency+ClaimAhead hold a slot (Worker.busy), so up to
// ClaimAhead claims are taken while every handler runs. A claimed attempt
// then takes one of the Concurrency handler slots (Worker.inHandler): at
// once when one is free, else it waits in Worker.ahead, and the handler
// that returns first hands its slot straight to the waiting attempt of
// the highest priority (the earliest claimed among equals), so the next
// handler starts without a write between. The waiting attempt keeps its
// goroutine (at most ClaimAhead of them, whatever the number of claims
// in the ledger) and its claim under the worker's lease; Close gives
// every waiting claim back at once (releaseAhead), and a cancellation or
// the loss of the worker's lease ends the wait through the handler's
// context, which exists from the claim on.

// enterHandler takes a handler slot for r, claimed, waiting for one when
// all are busy. It returns false when r may not run: the worker drains,
// or r's context ended while it waited (cancelled, lost, released).
func (w *Worker) enterHandler(r *run) bool {
	w.mu.Lock()
	if w.draining || r.cause != nil {
		w.mu.Unlock()
		return false
	}
	if w.inHandler < w.cfg.Concurrency {
		w.inHandler++
		r.handling = true
		w.mu.Unlock()
		return true
	}
	r.grant = make(chan struct{})
	w.ahead = append(w.ahead, r)
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
	return false
}

// leaveHandlerLocked gives r's handler slot to the best waiting attempt.
func (w *Worker) leaveHandlerLocked(r *run) {
	if !r.handling {
		return
	}
	r.handling = false
	w.inHandler--
	for !w.draining && w.inHandler < w.cfg.Concurrency && len(w.ahead) > 0 {
		best := 0
		for i, a := range w.ahead {
			if a.prio > w.ahead[best].prio {
				best = i
			}
		}
		next := w.ahead[best]
		w.ahead = slices.Delete(w.ahead, best, best+1)
		next.handling = true
		w.inHandler++
		close(next.grant)
	}
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
