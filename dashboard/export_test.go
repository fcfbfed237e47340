package dashboard

import (
	"time"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/kvledger"
)

func eventFor(key, owner string) events.Event {
	return events.Event{Name: kvledger.ClaimedEvent, Source: "s", Key: key, Owner: owner, Revision: 1, Time: time.Unix(1, 0)}
}

// SetTimelineScan sets the timeline's scan bound for one test.
func SetTimelineScan(t interface{ Cleanup(func()) }, n int) {
	old := maxTimelineScan
	maxTimelineScan = n
	t.Cleanup(func() { maxTimelineScan = old })
}
