package dashboard

import (
	"time"
)

// runAtClock tells the pages when a record's run-at passes: its phase
// changes then (scheduled or retrying becomes pending) with no write for
// the record watch to deliver. It sleeps until the earliest run-at ahead,
// or until a record with a run-at is written, and pushes each record
// whose run-at passed as a record change. It runs until Close.
func (h *Handler) runAtClock() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := h.cfg.Clock.Now()
		passed, next := h.tasks.runAtsPassed(now)
		for _, s := range passed {
			h.broker.publish(push{Type: "ledger", Data: recordJSON(s, now)})
		}
		wait := time.Hour // a record written meanwhile wakes the clock
		if !next.IsZero() {
			wait = next.Sub(now)
		}
		timer.Reset(wait)
		select {
		case <-h.life.Done():
			return
		case <-h.tasks.timedAdded:
		case <-timer.C:
		}
	}
}
