package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// tailReconnect are the connection options of `events tail`: it keeps
// reconnecting for as long as it runs (a tail outlives server restarts),
// and says on stderr when the connection goes and comes back, so that a
// tail that prints nothing is never mistaken for a quiet ledger.
func (a *app) tailReconnect(durable bool) []nats.Option {
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = fmt.Fprintf(a.stderr, "natscoord: events tail: "+format+"\n", args...)
	}
	missed := "events published meanwhile are not shown (use --durable to get them)"
	if durable {
		missed = "the durable consumer resumes where it stopped"
	}
	return []nats.Option{
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			switch {
			case nc.IsClosed():
				// tail's own Close at its end: nothing was lost.
			case err != nil:
				say("connection to the server lost (%v); reconnecting", err)
			default:
				say("connection to the server lost; reconnecting")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			say("reconnected to %s; %s", redactURLs(nc.ConnectedUrl()), missed)
		}),
	}
}
