package dashboard

import (
	"time"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/kvledger"
)

func eventFor(key, owner string) events.Event {
	return events.Event{Name: kvledger.ClaimedEvent, Source: "s", Key: key, Owner: owner, Revision: 1, Time: time.Unix(1, 0)}
}
