package dashboard

import (
	"time"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/kvledger"
)

func eventFor(key, owner string) events.Event {
	return events.Event{Name: kvledger.ClaimedEvent, Source: "s", Key: key, Owner: owner, Revision: 1, Time: time.Unix(1, 0)}
}

// RewatchRecords stops the record watch, runs whileDown, then tells the
// feed its watch ended, as a watch that ends on its own does: the feed
// starts a new one (after rewatch's pause). Changes whileDown makes are
// seen only by what the new watch delivers.
func (h *Handler) RewatchRecords(whileDown func()) {
	f := h.feed
	f.mu.Lock()
	w := f.watch
	f.mu.Unlock()
	w.Stop()
	whileDown()
	f.ended <- struct{}{}
}

// RemovedSchedules is how many schedule names the dashboard holds as
// removed (schedules.go's bound).
func (h *Handler) RemovedSchedules() int {
	h.schedules.mu.RLock()
	defer h.schedules.mu.RUnlock()
	return len(h.schedules.removed)
}
