package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// reconnecting are the connection options of a command that outlives
// server restarts (events tail, ledger wait): it keeps reconnecting for
// as long as it runs, and says on stderr, as command, when the connection
// goes and when it is back and what resumes then, so that a command that
// prints nothing is never mistaken for a quiet ledger.
func (a *app) reconnecting(command, resumes string) []nats.Option {
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = fmt.Fprintf(a.stderr, "natscoord: "+command+": "+format+"\n", args...)
	}
	return []nats.Option{
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			switch {
			case nc.IsClosed():
				// the command's own Close at its end: nothing was lost.
			case err != nil:
				say("connection to the server lost (%s); reconnecting", a.conn.redact(err.Error()))
			default:
				say("connection to the server lost; reconnecting")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			say("reconnected to %s; %s", redactURLs(nc.ConnectedUrl()), resumes)
		}),
	}
}

// tailReconnect are the connection options of `events tail`.
func (a *app) tailReconnect(durable bool) []nats.Option {
	missed := "events published meanwhile are not shown (use --durable to get them)"
	if durable {
		missed = "the durable consumer resumes where it stopped"
	}
	return a.reconnecting("events tail", missed)
}
