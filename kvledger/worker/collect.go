package worker

import (
	"context"

	"github.com/natscoord/natscoord/kvledger"
)

// Outcomes are pipelined: the attempt goroutine sends its outcome's
// compare-and-swap (finishAsync, protocol.go) and goes on to the next
// attempt without waiting for the answer; the worker's one collector
// goroutine waits for the answers in the order the outcomes were sent
// and settles each as an awaited outcome was settled (record, settle): a
// refused outcome (ErrFenced, the claim no longer this worker's) is
// dropped and counted lost, a transient failure goes through finish's
// retries, and only then is the task's key filed again (endRun), so no
// later write of this worker to the key overtakes its outcome. The
// handler slot was given back when the handler returned (freeSlot), so
// the next handler never waits on an outcome.

// sentOutcome is an outcome in flight, waiting for the collector.
type sentOutcome struct {
	r    *run
	hctx context.Context
	ev   Event
	o    kvledger.Outcome
	sent *kvledger.PendingFinish
}

// startCollectorLocked (w.mu held) starts the collector goroutine;
// stopCollector ends it.
func (w *Worker) startCollectorLocked() {
	w.collecting, w.collected = true, make(chan struct{})
	go func() {
		defer close(w.collected)
		for so := range w.outcomes {
			w.settle(so)
			so.r.end()
		}
	}()
}

// stopCollector ends the collector once the drain is over: the outcomes
// already sent are settled first (bounded by ctx); an attempt that ends
// later (its handler ignored the cancellation) settles its own outcome.
func (w *Worker) stopCollector(ctx context.Context) {
	w.mu.Lock()
	was := w.collecting
	w.collecting = false
	w.mu.Unlock()
	if !was {
		return
	}
	close(w.outcomes)
	select {
	case <-w.collected:
	case <-ctx.Done():
	}
}

// collect hands so to the collector and reports true, or reports false
// when it is not running (the attempt then settles so itself). The
// channel holds as many outcomes as attempts can be running
// (canStartLocked), so the send does not wait.
func (w *Worker) collect(so *sentOutcome) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.collecting {
		return false
	}
	select {
	case w.outcomes <- so:
		return true
	default:
		return false
	}
}
