package worker

import "github.com/natscoord/natscoord/kvledger"

// Paused kinds (kvledger.Pause: tasks.Client.Pause, `natscoord ledger
// pause`) reach the worker through its record watch, as stored schedules
// do: one ordered consumer delivers records, schedules and pauses, so a
// pause takes effect when its record arrives and a resume when its
// deletion does, with nothing polled. The producer skips a paused kind's
// ready queue (startReadyLocked): its tasks stay ready, in their places,
// claimed by nobody and using no attempt; a resume wakes the producer,
// which starts them at once.

// onPause applies one change of a kind's pause (the record watch's
// goroutine).
func (w *Worker) onPause(c kvledger.PauseChange) {
	if c.Kind == "" {
		return // not a key the ledger writes
	}
	if c.Err != nil {
		w.cfg.Logger.Warn("worker: a kind's pause does not decode; taking the kind as paused", "kind", c.Kind, "err", c.Err)
	}
	w.mu.Lock()
	if c.Paused {
		w.paused[c.Kind] = c.Pause
	} else {
		delete(w.paused, c.Kind)
	}
	w.mu.Unlock()
	if !c.Paused {
		w.poke() // its ready tasks start at once
	}
}

// pausedLocked reports whether the producer starts none of kind's tasks.
func (w *Worker) pausedLocked(kind string) bool {
	_, ok := w.paused[kind]
	return ok
}

// schedulesPaused reports whether kind's schedules admit no period.
func (w *Worker) schedulesPaused(kind string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.paused[kind].Schedules
}
