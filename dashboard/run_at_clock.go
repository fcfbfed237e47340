package dashboard

import (
	"time"
)

// runAtClock tells the pages when a record's run-at passes: its phase
// changes then (scheduled or retrying becomes pending) with no write for
// the record watch to deliver. It sleeps until the earliest run-at ahead,
// or until a record with a run-at is written, and pushes each record
// whose run-at passed as a record change. It runs until Close. It waits
// on Config.Clock, so a manual clock's Advance wakes it too.
func (h *Handler) runAtClock() {
	fired := make(chan struct{}, 1)
	stop := func() bool { return false }
	defer func() { stop() }()
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
		stop()
		stop = h.cfg.Clock.AfterFunc(wait, func() {
			select {
			case fired <- struct{}{}:
			default: // one wake-up pending is enough
			}
		})
		select {
		case <-h.life.Done():
			return
		case <-h.tasks.timedAdded:
		case <-fired:
		}
	}
}
